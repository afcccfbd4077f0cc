import ArgumentParser
import Foundation
import Logging
import NIOCore
import PushlineBroker
import PushlineClient
import PushlineRPC

/// `pushline demo`: the whole product on the embedded default, in one command.
struct DemoCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "demo",
    abstract: "Run a broker, simulated earnings and incentives services, and a driver's tracker.",
    discussion: """
      Starts a broker (SQLite in a data directory) on a free loopback port, two simulated \
      backend services publishing cards with expiries, and a client for driver 42 that keeps \
      its cards in its own SQLite cache. Every so often the client's connection is cut, so \
      cards turn stale and then resume without a snapshot. In a terminal it draws the tracker \
      (p: privacy mode, q: quit); otherwise it logs one line per change. Ctrl-C stops it.
      """
  )

  @Option(help: "Stop after this many seconds (for scripts); runs until Ctrl-C otherwise.")
  var duration: Double?

  @Option(help: "Where the broker's and the client's databases go; a temporary directory, removed at exit, if absent.")
  var dataDir: String?

  @Flag(help: "Log plain lines even in a terminal.")
  var plain = false

  func validate() throws {
    if let duration, duration <= 0 { throw ValidationError("--duration must be positive") }
  }

  func run() async throws {
    let output: @Sendable (String) -> Void = { line in FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
    let limit = duration.map { Duration.milliseconds(Int64($0 * 1000)) }
    try await Self.run(dataDirectory: dataDir, plain: plain || !Terminal.isInteractive, output: output) {
      if let limit { try? await Task.sleep(for: limit) } else { await TerminationSignal.received() }
    }
  }

  /// The demo, writing to `output` until `stop` returns (or q in the terminal); tests run it
  /// in-process, and stop it once it has shown what they look for.
  static func run(
    dataDirectory: String?, plain: Bool, output: @escaping @Sendable (String) -> Void, until stop: @escaping @Sendable () async -> Void
  ) async throws {
    let directory = dataDirectory ?? FileManager.default.temporaryDirectory.appendingPathComponent("pushline-demo-\(UUID().uuidString)").path
    defer { if dataDirectory == nil { try? FileManager.default.removeItem(atPath: directory) } }
    let secret = (0..<32).map { _ in UInt8.random(in: 0...255) }
    // The demo's screen is the tracker: only warnings and errors of the broker and its server
    // join it.
    var quiet = Logger(label: "pushline.demo.broker")
    quiet.logLevel = .warning
    let storage = try SQLiteBrokerStorage(directory: directory + "/broker", logger: quiet)
    // Closed before its directory is removed (defers run last first): a close records the run.
    defer { try? storage.close() }
    var host = BrokerHost(
      storage: storage,
      configuration: BrokerConfiguration(watermarkInterval: .seconds(5), logger: quiet), secret: secret, host: "127.0.0.1", port: 0)
    host.rpcLogger = quiet
    try await host.run { running in
      let port = running.address.port!
      let expiry = WallClock.systemMillis() + 86_400_000
      let services = DemoServices(
        host: "127.0.0.1", port: port,
        token: try await running.authority.mint(subject: "demo-services", role: .publisher, topics: ["driver/*"], expiresAtMillis: expiry),
        driver: "42", tripInterval: .milliseconds(1200), nowMillis: WallClock.systemMillis)
      let driverToken = try await running.authority.mint(subject: "driver-42", role: .subscriber, topics: ["driver/42/*"], expiresAtMillis: expiry)
      let cache = try CardCache(persistence: SQLiteCachePersistence(path: directory + "/client/cache.sqlite"))
      let tracker = TrackerDataManager(
        cache: cache, topics: [services.earningsTopic, services.incentivesTopic],
        configuration: .init(staleAfterOffline: .seconds(1)))
      let connector = DemoNetworkCuts(
        inner: RPCTrackerConnector(host: "127.0.0.1", port: port, token: driverToken), liveFor: .milliseconds(3500),
        downFor: .milliseconds(2500))
      let manager = ConnectionManager(
        connector: connector,
        services: [
          ServiceDataManager(name: "earnings", topic: services.earningsTopic),
          ServiceDataManager(name: "incentives", topic: services.incentivesTopic),
        ],
        tracker: tracker, backoff: Backoff(initial: .milliseconds(200), maximum: .seconds(2)))
      output("pushline demo: broker on 127.0.0.1:\(port), data in \(directory); driver 42's tracker follows")
      let watcher = TrackerWatcher(tracker: tracker, title: "driver 42", plain: plain, nowMillis: WallClock.systemMillis, output: output)
      await withTaskGroup(of: Void.self) { group in
        group.addTask { try? await services.run() }
        group.addTask { await manager.run() }
        group.addTask { await watcher.run() }
        group.addTask { await stop() }
        _ = await group.next()  // the duration, a signal, a test's stop, or q in the terminal
        group.cancelAll()
      }
      output("pushline demo: stopped")
    }
  }
}
