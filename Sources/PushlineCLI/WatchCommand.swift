import ArgumentParser
import Foundation
import PushlineClient
import PushlineRPC

/// `pushline watch`: one driver's tracker, live from a broker.
struct WatchCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "watch",
    abstract: "Show a driver's tracker (status, browse, bulletins) live from a broker.",
    discussion: """
      Follows driver/ID/earnings and driver/ID/incentives (or the --topic's given), keeping the \
      cards in a SQLite cache so that a restart during an outage still shows them. In a terminal \
      it draws the tracker (p: privacy mode, q: quit); otherwise it logs one line per change. \
      The token comes from --token or $PUSHLINE_TOKEN (a subscriber token for those topics). \
      It runs until q, Ctrl-C or SIGTERM (exit status 0); should the broker refuse the token or \
      the topics for good, it prints why and exits with status 1.
      """
  )

  @Argument(help: "The broker, as HOST:PORT.")
  var address: String

  @Option(help: "The driver whose tracker to show.")
  var driver = "42"

  @Option(name: .customLong("topic"), help: "A topic to follow instead of the driver's two (repeat for more).")
  var topics: [String] = []

  @Option(help: "The auth token (default: $PUSHLINE_TOKEN).")
  var token: String?

  @Option(help: "The card cache's SQLite file.")
  var cache = "pushline-watch-cache.sqlite"

  @Option(help: "Seconds offline after which cards are marked stale (at most a year).")
  var staleAfter = 30

  @Flag(help: "Log plain lines even in a terminal.")
  var plain = false

  func validate() throws {
    guard ServerAddress(address) != nil else { throw ValidationError("expected HOST:PORT, got '\(address)'") }
    guard (0...SecondsLimit.maximum).contains(staleAfter) else {
      throw ValidationError("--stale-after must be at least 0 and at most \(SecondsLimit.description), not \(staleAfter)")
    }
  }

  func run() async throws {
    let server = ServerAddress(address)!
    guard let token = token ?? ProcessInfo.processInfo.environment["PUSHLINE_TOKEN"] else {
      throw CommandFailure("no token: pass --token or set PUSHLINE_TOKEN (pushline token --role subscriber mints one)")
    }
    let cards: CardCache
    do {
      cards = try CardCache(persistence: SQLiteCachePersistence(path: cache))
    } catch {
      throw CommandFailure("cannot open the card cache \(cache): \(error.localizedDescription)")
    }
    try await Self.watch(
      server: server, token: token, topics: topics.isEmpty ? ["driver/\(driver)/earnings", "driver/\(driver)/incentives"] : topics,
      cache: cards, staleAfter: .seconds(Int64(staleAfter)),
      plain: plain || !Terminal.isInteractive, output: { line in FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
    ) { await TerminationSignal.received() }
  }

  /// Follows `topics` on `server`, their cards kept in `cache`, and shows the tracker on
  /// `output` until `stop` returns (SIGINT or SIGTERM), `q` is pressed, or the connection
  /// manager stops for good. The first two are a normal end; the last is a failure (exit
  /// status 1, with the manager's reason, which the watcher may be cancelled before it shows),
  /// so that a script tells a refused token or topic from a normal end. Tests run it in-process.
  ///
  /// - Throws: ``CommandFailure`` with the manager's reason when it stopped for good.
  static func watch(
    server: ServerAddress, token: String, topics: [String], cache: CardCache, staleAfter: Duration, plain: Bool,
    output: @escaping @Sendable (String) -> Void, until stop: @escaping @Sendable () async -> Void
  ) async throws {
    let tracker = TrackerDataManager(cache: cache, topics: topics, configuration: .init(staleAfterOffline: staleAfter))
    let followed = tracker.topics  // each once, however often given
    let manager = ConnectionManager(
      connector: RPCTrackerConnector(host: server.host, port: server.port, token: token),
      services: followed.map { ServiceDataManager(name: $0, topic: $0) }, tracker: tracker)
    let watcher = TrackerWatcher(
      tracker: tracker, title: "\(followed.joined(separator: ", ")) on \(server)", plain: plain, nowMillis: WallClock.systemMillis,
      output: output)
    // Whether the manager ended first, on its own: every run ends stopped, a cancelled one too.
    let stoppedForGood = await withTaskGroup(of: Bool.self) { group in
      group.addTask { await manager.run(); return true }
      group.addTask { await watcher.run(); return false }
      group.addTask { await stop(); return false }
      let first = await group.next() ?? false
      group.cancelAll()
      return first
    }
    if stoppedForGood, case .stopped(let reason) = manager.connectionState.phase { throw CommandFailure("stopped: \(reason)") }
  }
}
