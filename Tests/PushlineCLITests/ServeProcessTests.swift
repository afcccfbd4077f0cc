import Dispatch
import Foundation
import PushlineBroker
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import Testing

@testable import PushlineCLI

#if canImport(Glibc)
  import Glibc
#endif

/// `pushline serve` as an operator runs it: a child process configured by flags, environment and
/// a config file, stopped with SIGTERM.
@Suite("pushline serve as a process")
struct ServeProcessTests {
  /// The `pushline` executable that `swift build` made next to the tests.
  static let executable = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent(".build/debug/pushline")

  static let secret = "0123456789abcdef0123456789abcdef"

  @Test func sigtermStopsTheBrokerGracefullyWithStatusZero() async throws {
    try #require(FileManager.default.isExecutableFile(atPath: Self.executable.path), "run `swift build` first")
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-serve-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    // The grace period is far longer than the test takes: a subscription must not wait for it.
    let gracePeriod = 60
    // Each of host, port and storage is set twice, so the printed line shows which source won.
    let config = directory.appendingPathComponent("serve.json")
    try #"{"host": "127.0.0.2", "port": 9, "storage": "sqlite", "dataDir": "\#(directory.path)/data", "gracePeriod": \#(gracePeriod)}"#
      .write(to: config, atomically: true, encoding: .utf8)

    let process = Process()
    process.executableURL = Self.executable
    process.arguments = ["serve", "--port", "0", "--storage", "memory", "--config", config.path]
    process.environment = [
      "PUSHLINE_TOKEN_SECRET": Self.secret, "PUSHLINE_HOST": "127.0.0.1", "PUSHLINE_METRICS_PORT": "0",
    ]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    let (exits, exited) = AsyncStream<(reason: Process.TerminationReason, status: Int32)>.makeStream()
    process.terminationHandler = { exited.yield(($0.terminationReason, $0.terminationStatus)) }
    try process.run()
    let pid = process.processIdentifier
    // A failed expectation must not leave the broker running, nor a hung one the whole run.
    defer { if process.isRunning { _ = kill(pid, SIGKILL) } }
    let watchdog = Task {
      try await Task.sleep(for: .seconds(120))
      _ = kill(pid, SIGKILL)
    }
    defer { watchdog.cancel() }

    var lines = Self.lines(of: output.fileHandleForReading).makeAsyncIterator()
    let serving = try #require(await lines.next(), "pushline serve printed nothing")
    let match = try #require(serving.wholeMatch(of: #/pushline: serving on 127\.0\.0\.1:(\d+), topics in memory/#), "\(serving)")
    let port = try #require(Int(match.1))
    #expect(port != 9 && port != 0)
    let ping = try await PingCommand.check(host: "127.0.0.1", port: port, timeout: .seconds(60))
    #expect(ping.contains("SERVING"))

    // SIGTERM while a subscriber streams: its connection's GOAWAY (within the lame-duck
    // period) ends the stream, not the grace period, with UNAVAILABLE and a retry-after hint
    // within the reconnect spread (docs/PROTOCOL.md 2.6, 3.5); then the process exits cleanly.
    var signalled = ContinuousClock.now
    let ending = try await Self.withSubscription(port: port) {
      signalled = .now
      _ = kill(pid, SIGTERM)
    }
    let waited = ContinuousClock.now - signalled
    #expect(waited < .seconds(gracePeriod))
    let status = try #require(ending, "the stream ended with OK")
    #expect(status.code == .unavailable && status.message == "the broker is shutting down", "\(status)")
    let hint = try #require(status.retryAfterMillis, "\(status)")
    #expect((0...BrokerConfiguration().reconnectSpread.milliseconds).contains(Int64(hint)))
    var rest: [String] = []
    while let line = await lines.next() { rest.append(line) }
    var terminations = exits.makeAsyncIterator()
    let exit = try #require(await terminations.next())
    #expect(rest == ["pushline: stopping"])
    #expect(exit.reason == .exit && exit.status == 0)
  }

  /// Subscribes to a topic on the broker at `port`, waits for the first update (the call is
  /// live), runs `action`, and reads the stream to its end; returns the status it ended with,
  /// `nil` for OK.
  static func withSubscription(port: Int, _ action: () -> Void) async throws -> RPCError? {
    let authority = try await TokenAuthority(secret: Array(secret.utf8), nowMillis: WallClock.systemMillis)
    var configuration = ClientConnectionStateMachine.Configuration()
    configuration.authToken = try await authority.mint(
      subject: "test", role: .subscriber, topics: ["driver/1"], expiresAtMillis: WallClock.systemMillis() + 3_600_000)
    return try await RPCClient.withConnection(host: "127.0.0.1", port: port, configuration: configuration) { connection in
      var updates = connection.serverStreaming(
        BrokerService.subscribeMethod, request: SubscribeRequest(topics: [TopicPosition(topic: "driver/1")]),
        response: TopicUpdate.self
      ).makeAsyncIterator()
      _ = try #require(try await updates.next())
      action()
      do {
        while try await updates.next() != nil {}
        return nil
      } catch let error as RPCError {
        return error
      }
    }
  }

  /// The lines `handle` yields until its end, read on a dispatch thread: the reads block, and
  /// the cooperative pool has a thread per core.
  static func lines(of handle: FileHandle) -> AsyncStream<String> {
    let (lines, continuation) = AsyncStream<String>.makeStream()
    DispatchQueue.global().async {
      var buffer: [UInt8] = []
      while case let chunk = handle.availableData, !chunk.isEmpty {
        buffer += chunk
        while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
          continuation.yield(String(decoding: buffer[..<newline], as: UTF8.self))
          buffer.removeSubrange(...newline)
        }
      }
      continuation.finish()
    }
    return lines
  }
}
