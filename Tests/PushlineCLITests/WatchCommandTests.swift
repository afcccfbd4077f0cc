import ArgumentParser
import Foundation
import NIOCore
import PushlineBroker
import PushlineClient
import PushlineRPC
import Testing

@testable import PushlineCLI

@Suite("pushline watch", .timeLimit(.minutes(1)))
struct WatchCommandTests {
  /// Runs `body` with the port of a broker on loopback and its token authority.
  static func withBroker(_ body: (Int, TokenAuthority) async throws -> Void) async throws {
    let host = BrokerHost(
      storage: InMemoryBrokerStorage(), configuration: BrokerConfiguration(),
      secret: Array("0123456789abcdef0123456789abcdef".utf8), host: "127.0.0.1", port: 0)
    try await host.run { running in try await body(running.address.port!, running.authority) }
  }

  /// Watches driver 42 on the broker at `port` with `token`, in plain lines to `output`.
  static func watch(
    port: Int, token: String, output: @escaping @Sendable (String) -> Void = { _ in }, until stop: @escaping @Sendable () async -> Void
  ) async throws {
    try await WatchCommand.watch(
      server: try #require(ServerAddress("127.0.0.1:\(port)")), token: token, topics: ["driver/42/earnings"],
      cache: try CardCache(persistence: nil), staleAfter: .seconds(30), plain: true, output: output, until: stop)
  }

  /// A cache path that cannot be a SQLite file (a directory here) fails before connecting,
  /// naming the cache and the path.
  @Test func aCacheThatCannotBeOpenedIsNamed() async throws {
    let directory = FileManager.default.temporaryDirectory.path
    let command = try WatchCommand.parse(["127.0.0.1:1", "--token", "x", "--cache", directory])
    let error = await #expect(throws: CommandFailure.self) { try await command.run() }
    #expect(error?.description.hasPrefix("cannot open the card cache \(directory): ") == true, "\(error.map { "\($0)" } ?? "")")
  }

  /// A token the broker refuses stops the connection manager for good: `watch` fails with the
  /// reason (exit status 1) instead of ending as it does when stopped by a signal.
  @Test func aRefusedTokenIsAFailure() async throws {
    try await Self.withBroker { port, _ in
      await #expect {
        try await Self.watch(port: port, token: "not-a-token") {
          try? await Task.sleep(for: .seconds(3600))  // no signal: only the refusal ends the watch
        }
      } throws: { error in
        error is CommandFailure && "\(error)".hasPrefix("stopped: UNAUTHENTICATED")
      }
    }
  }

  /// Stopped once live (as by SIGINT or SIGTERM), `watch` ends normally: exit status 0.
  @Test func aStopIsANormalEnd() async throws {
    try await Self.withBroker { port, authority in
      let token = try await authority.mint(
        subject: "driver-42", role: .subscriber, topics: ["driver/42/*"], expiresAtMillis: WallClock.systemMillis() + 3_600_000)
      let (lines, continuation) = AsyncStream<String>.makeStream()
      try await Self.watch(port: port, token: token, output: { continuation.yield($0) }) {
        for await line in lines where line.hasSuffix(" connection: live") { return }
      }
    }
  }
}
