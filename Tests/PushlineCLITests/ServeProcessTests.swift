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

  /// A `pushline serve` child process, its output's lines, and its exit.
  struct Served {
    let process: Process
    var lines: AsyncStream<String>.Iterator
    var exits: AsyncStream<(reason: Process.TerminationReason, status: Int32)>.Iterator
    /// The port it serves on, from its first line.
    let port: Int
    let watchdog: Task<Void, any Error>

    /// Kills the process if a failed expectation left it running.
    func end() {
      watchdog.cancel()
      if process.isRunning { _ = kill(process.processIdentifier, SIGKILL) }
    }
  }

  /// Starts `pushline serve` with `arguments` and `environment`, and reads its first line, which
  /// must say it serves on 127.0.0.1 with topics in memory.
  static func serve(_ arguments: [String], environment: [String: String]) async throws -> Served {
    try #require(FileManager.default.isExecutableFile(atPath: Self.executable.path), "run `swift build` first")
    let process = Process()
    process.executableURL = Self.executable
    process.arguments = ["serve"] + arguments
    process.environment = environment
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    let (exits, exited) = AsyncStream<(reason: Process.TerminationReason, status: Int32)>.makeStream()
    process.terminationHandler = { exited.yield(($0.terminationReason, $0.terminationStatus)) }
    try process.run()
    let pid = process.processIdentifier
    // A hung broker must not hold up the whole run.
    let watchdog = Task {
      try await Task.sleep(for: .seconds(120))
      _ = kill(pid, SIGKILL)
    }
    var lines = Self.lines(of: output.fileHandleForReading).makeAsyncIterator()
    guard let serving = await lines.next(), let match = serving.wholeMatch(of: #/pushline: serving on 127\.0\.0\.1:(\d+), topics in memory/#),
      let port = Int(match.1)
    else {
      watchdog.cancel()
      _ = kill(pid, SIGKILL)
      throw ServeFailure(description: "pushline serve did not say it serves on 127.0.0.1 in memory")
    }
    return Served(process: process, lines: lines, exits: exits.makeAsyncIterator(), port: port, watchdog: watchdog)
  }

  struct ServeFailure: Error, CustomStringConvertible { var description: String }

  @Test func sigtermStopsTheBrokerGracefullyWithStatusZero() async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-serve-\(UUID())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    // The grace period is far longer than the test takes: a subscription must not wait for it.
    let gracePeriod = 60
    // Each of host, port and storage is set twice, so the printed line shows which source won.
    let config = directory.appendingPathComponent("serve.json")
    try #"{"host": "127.0.0.2", "port": 9, "storage": "sqlite", "dataDir": "\#(directory.path)/data", "gracePeriod": \#(gracePeriod)}"#
      .write(to: config, atomically: true, encoding: .utf8)
    var served = try await Self.serve(
      ["--port", "0", "--storage", "memory", "--config", config.path],
      environment: ["PUSHLINE_TOKEN_SECRET": Self.secret, "PUSHLINE_HOST": "127.0.0.1", "PUSHLINE_METRICS_PORT": "0"])
    defer { served.end() }
    #expect(served.port != 9)
    let ping = try await PingCommand.check(host: "127.0.0.1", port: served.port, timeout: .seconds(60))
    #expect(ping.contains("SERVING"))

    // SIGTERM while a subscriber streams: its connection's GOAWAY (within the lame-duck
    // period) ends the stream, not the grace period, with UNAVAILABLE and a retry-after hint
    // within the reconnect spread (docs/PROTOCOL.md 2.6, 3.5); then the process exits cleanly.
    var signalled = ContinuousClock.now
    let ending = try await Self.withSubscription(port: served.port) {
      signalled = .now
      _ = kill(served.process.processIdentifier, SIGTERM)
    }
    let waited = ContinuousClock.now - signalled
    #expect(waited < .seconds(gracePeriod))
    let status = try #require(ending, "the stream ended with OK")
    #expect(status.code == .unavailable && status.message == "the broker is shutting down", "\(status)")
    let hint = try #require(status.retryAfterMillis, "\(status)")
    #expect((0...BrokerConfiguration().reconnectSpread.milliseconds).contains(Int64(hint)))
    var rest: [String] = []
    while let line = await served.lines.next() { rest.append(line) }
    let exit = try #require(await served.exits.next())
    #expect(rest == ["pushline: stopping"])
    #expect(exit.reason == .exit && exit.status == 0)
  }

  /// SIGQUIT stops the broker at once: no lame-duck period, no GOAWAY — its connections just
  /// close — and a failure status, since clients got no notice.
  @Test func sigquitStopsTheBrokerAtOnce() async throws {
    var served = try await Self.serve(
      ["--port", "0", "--storage", "memory", "--lame-duck-period", "60", "--grace-period", "60"],
      environment: ["PUSHLINE_TOKEN_SECRET": Self.secret])
    defer { served.end() }
    let ending = try await Self.withSubscription(port: served.port) { _ = kill(served.process.processIdentifier, SIGQUIT) }
    let status = try #require(ending, "the stream ended with OK")
    #expect(status.code == .unavailable && status.message != "the broker is shutting down", "\(status)")
    var rest: [String] = []
    while let line = await served.lines.next() { rest.append(line) }
    let exit = try #require(await served.exits.next())
    #expect(rest.isEmpty)
    #expect(exit.reason == .exit && exit.status != 0)
  }

  /// SIGQUIT to a broker with no connection open cuts nothing short: it stops at once (no
  /// "stopping", no lame-duck period) and exits 0, as README says.
  @Test func sigquitWithNoConnectionOpenExitsZero() async throws {
    var served = try await Self.serve(
      ["--port", "0", "--storage", "memory", "--lame-duck-period", "60"], environment: ["PUSHLINE_TOKEN_SECRET": Self.secret])
    defer { served.end() }
    _ = kill(served.process.processIdentifier, SIGQUIT)
    var rest: [String] = []
    while let line = await served.lines.next() { rest.append(line) }
    let exit = try #require(await served.exits.next())
    #expect(rest.isEmpty)
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
