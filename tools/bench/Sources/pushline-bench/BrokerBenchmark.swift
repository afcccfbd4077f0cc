import ArgumentParser
import Foundation
import PushlineBroker

/// `pushline-bench broker`: the same load on Pushline's broker (in-memory and SQLite storage)
/// and on nats-server in one run. Each broker runs in its own child process, started fresh for
/// each scenario; the load generator runs in another (`broker-load`); this process only
/// orchestrates and prints the table.
struct BrokerBenchmark: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "broker",
    abstract: "Pushline's broker vs nats-server: fan-out, broadcast, idle connections, latency at a fixed rate; Pushline's memory under reconnect churn."
  )

  @Option(help: "Subscriber connections in (a), (b) and (d).") var subscribers = 1_000
  @Option(help: "Card updates in (a).") var updates = 1_000_000
  @Option(help: "Publishes to the broadcast topic in (b) (each reaches every subscriber); default updates ÷ 200.")
  var broadcastUpdates: Int?
  @Option(help: "Idle subscriber connections in (c).") var idleConnections = 10_000
  @Option(help: "Updates per second in (d).") var rate = 50_000
  @Option(help: "Seconds of publishing in (d).") var rateSeconds = 10
  @Option(help: "Pushline publishes in flight on the publisher's connection (the broker allows 8,192).") var window = 8_192
  @Option(help: "Card changes per Pushline PublishRequest (distinct cards of one topic).") var changesPerPublish = 1
  @Flag(help: "Publish with one Publish call per PublishRequest instead of one PublishStream call for all.")
  var unaryPublishes = false
  @Option(help: "Distinct cards per topic, updated in turn, in (a) and (d).") var cardsPerTopic = 8
  @Option(
    help: """
      Distinct cards of the broadcast topic in (b), updated in turn; default one per update, so \
      that every change reaches every subscriber on both brokers (with fewer, Pushline may \
      coalesce a subscriber's queued versions of a card, and delivers fewer changes).
      """)
  var broadcastCards: Int?
  @Option(help: "Connections per round in (e).") var churnConnections = 1_000
  @Option(help: "Updates per second published to (e)'s topics, for the whole run.") var churnRate = 2_000
  @OptionGroup var churn: ChurnOptions
  @Option(help: "Scenarios to run: fanout, broadcast, idle, latency, churn (comma-separated; churn runs only when named).")
  var scenarios = "fanout,broadcast,idle,latency"
  @Option(
    help: """
      Brokers: memory, sqlite, nats, nio (comma-separated). nio is DESIGN.md's reference: a bare \
      SwiftNIO fan-out server speaking nats-server's protocol (no auth, storage or acks), \
      driven as nats-server is, to show what SwiftNIO allows on this machine.
      """)
  var brokers = "memory,sqlite,nats"
  @Option(help: "Repetitions; with more than one, a table of medians follows.") var runs = 1
  @Option(help: "Seconds after which a scenario fails (the load generator is killed).") var timeout = 600
  @Option(help: "The nats-server executable.") var natsServer = "nats-server"
  @Option(help: ArgumentHelp("A command to run Pushline's broker under (a profiler), split at spaces.", visibility: .hidden))
  var brokerPrefix = ""
  @Option(help: ArgumentHelp("A command to run the load generator under (a profiler), split at spaces.", visibility: .hidden))
  var loadPrefix = ""
  @Flag(help: "Print the tables as Markdown.") var markdown = false
  @Flag(
    help: """
      Count Pushline's broker's heap allocations (malloc-interposer) over its whole life, \
      reported per delivery: a figure that does not vary with the machine's load, for comparing \
      builds. Counting costs the broker a little time.
      """)
  var countAllocations = false
  @Flag(help: "Also measure (c) with connections that only handshake, to split memory between connection and subscription.")
  var idleBreakdown = false
  @Option(
    help: """
      The Pushline broker's admission limit on new subscriptions per second (`pushline serve \
      --max-subscribes-per-second`); subscribers refused past it subscribe again after the \
      broker's retry-after hint. 0, the default, turns it off: nats-server has no such limit.
      """)
  var maxSubscribesPerSecond = 0

  static let brokerNames: [String: String] = [
    "memory": "Pushline memory", "sqlite": "Pushline SQLite", "nats": "nats-server", "nio": "bare SwiftNIO",
  ]

  /// Whether `broker` is one of Pushline's (the others speak nats-server's protocol).
  static func isPushline(_ broker: String) -> Bool { broker == "memory" || broker == "sqlite" }

  func validate() throws {
    guard changesPerPublish >= 1, changesPerPublish <= min(cardsPerTopic, broadcastCardCount) else {
      throw ValidationError("--changes-per-publish must be 1…--cards-per-topic and --broadcast-cards (the cards of one request are distinct)")
    }
    guard (1...BrokerService.connectionLimits.maxConcurrentCalls).contains(window) else {
      throw ValidationError("--window must be 1…\(BrokerService.connectionLimits.maxConcurrentCalls) (the broker's concurrent-call limit)")
    }
    guard subscribers > 0, updates > 0, idleConnections > 0, rate > 0, rateSeconds > 0, runs > 0, churnConnections > 0, churnRate > 0 else {
      throw ValidationError("sizes must be positive")
    }
  }

  func run() async throws {
    AllocationCounter.execWithoutInterposer()
    let fileLimit = ProcessStats.raiseFileLimit()
    if scenarioList.contains(.idle), fileLimit < idleConnections + 1_000 {
      throw ValidationError("the open-file limit is \(fileLimit); --idle-connections \(idleConnections) needs more (ulimit -n)")
    }
    ChildProcess.installSignalHandlers()
    let secret = (0..<32).map { _ in UInt8.random(in: 0...255) }
    let hexSecret = secret.map { String(format: "%02x", $0) }.joined()
    let authority = try await TokenAuthority(secret: secret, nowMillis: { Int64(Date().timeIntervalSince1970 * 1000) })
    let expiry = Int64(Date().timeIntervalSince1970 * 1000) + 86_400_000
    let environment = [
      "PUSHLINE_TOKEN_SECRET": hexSecret,
      "PUSHLINE_BENCH_PUBLISHER_TOKEN": try await authority.mint(subject: "bench-publisher", role: .publisher, topics: ["*"], expiresAtMillis: expiry),
      "PUSHLINE_BENCH_SUBSCRIBER_TOKEN": try await authority.mint(subject: "bench-subscriber", role: .subscriber, topics: ["*"], expiresAtMillis: expiry),
    ]
    printHeader()
    var allRuns: [[Cell: Double]] = []
    for run in 1...runs {
      var results: [Cell: Double] = [:]
      for scenario in scenarioList {
        // Churn reads the broker's own gauges to know when a round has settled: Pushline only.
        for broker in brokerList where scenario != .churn || Self.isPushline(broker) {
          FileHandle.standardError.write(Data("[run \(run)] \(scenario.rawValue) on \(Self.brokerNames[broker]!)…\n".utf8))
          do {
            let values = try measure(scenario, on: broker, environment: environment)
            for (key, value) in values { results[Cell(scenario: scenario, broker: broker, key: key)] = value }
          } catch {
            FileHandle.standardError.write(Data("[run \(run)] \(scenario.rawValue) on \(Self.brokerNames[broker]!) FAILED: \(error)\n".utf8))
          }
        }
        // Each scenario's rows as soon as it is done, so an interrupted run still shows them.
        print("\n[run \(run)] \(describe(scenario)):")
        BrokerReport(brokers: brokerList, scenarios: [scenario], describe: describe, markdown: markdown).print(results)
      }
      print("\nRun \(run) of \(runs):")
      BrokerReport(brokers: brokerList, scenarios: scenarioList, describe: describe, markdown: markdown).print(results)
      allRuns.append(results)
    }
    if runs > 1 {
      var medians: [Cell: Double] = [:]
      for cell in Set(allRuns.flatMap(\.keys)) {
        let values = allRuns.compactMap { $0[cell] }.sorted()
        medians[cell] = values[values.count / 2]
      }
      print("\nMedians of \(runs) runs:")
      BrokerReport(brokers: brokerList, scenarios: scenarioList, describe: describe, markdown: markdown).print(medians)
    }
  }

  /// One table cell's raw value: a scenario, a broker, a figure the load generator reported.
  struct Cell: Hashable {
    var scenario: BrokerLoad.Scenario
    var broker: String
    var key: String
  }

  private var scenarioList: [BrokerLoad.Scenario] {
    let list = scenarios.split(separator: ",").compactMap { BrokerLoad.Scenario(rawValue: String($0)) }.filter { $0 != .idleWithoutSubscriptions }
    return idleBreakdown && list.contains(.idle) ? list + [.idleWithoutSubscriptions] : list
  }

  private var brokerList: [String] {
    brokers.split(separator: ",").map(String.init).filter { Self.brokerNames[$0] != nil }
  }

  private var broadcastPublishes: Int { broadcastUpdates ?? max(1, updates / 200) }
  private var broadcastCardCount: Int { broadcastCards ?? broadcastPublishes * changesPerPublish }

  private func describe(_ scenario: BrokerLoad.Scenario) -> String {
    switch scenario {
    case .fanout: "(a) \(subscribers) subscribers on \(subscribers) topics, \(updates) updates"
    case .broadcast: "(b) \(subscribers) subscribers on 1 topic, \(broadcastPublishes) updates"
    case .idle: "(c) \(idleConnections) idle subscribers"
    case .idleWithoutSubscriptions: "(c′) \(idleConnections) idle connections, no subscription"
    case .latency: "(d) as (a) at \(rate) updates/s for \(rateSeconds) s"
    case .churn:
      "(e) \(churn.rounds) rounds of \(churnConnections) connections dropped after \(churn.holdSeconds) s (\(percent(churn.stallingShare)) stalling, \(percent(churn.vanishingShare)) vanishing, \(percent(churn.badTokenShare)) bad token, \(percent(churn.garbageShare)) garbage), \(churnRate) updates/s"
    }
  }

  private func percent(_ share: Double) -> String { String(format: "%.0f %%", share * 100) }

  private func printHeader() {
    print("broker benchmark: loopback, each broker in its own process (fresh for every scenario), the load generator in another")
    print(
      "cards: \(BenchCard.targetSize) bytes, \(cardsPerTopic) card IDs per topic updated in turn (in (b), \(broadcastCardCount)\(broadcastCards == nil ? ": a card of its own per change, so none can coalesce" : "")); subscribers count every delivered change"
    )
    print(
      "Pushline publisher: one connection, \(unaryPublishes ? "one Publish call per PublishRequest" : "one PublishStream call"), up to \(window) publishes in flight, \(changesPerPublish) change(s) per PublishRequest; an update counts when its ack arrives (durable: SQLite commits with synchronous=FULL)"
    )
    print("nats-server publisher: one connection, PUBs written as fast as the socket takes them — fire-and-forget, no ack; its 'acks/s' is PUBs until the PONG after the last one")
    print("Pushline subscribers: one Subscribe call per connection, no compression offered; a subscriber is done when its position reaches the topic's last acknowledged offset, so changes coalesced away by the broker count as done and are reported as 'coalesced'")
    print(
      maxSubscribesPerSecond > 0
        ? "Pushline broker: at most \(maxSubscribesPerSecond) new subscriptions a second (bursts of as many); refused subscribers retry after the broker's hint"
        : "Pushline broker: no admission limit on new subscriptions (as nats-server); `pushline serve` defaults to 5,000 a second")
    print("Pushline broker: no limit on the subscriptions of one token subject (every subscriber shares one token; nats-server has no such limit); `pushline serve` defaults to 100")
    print("\(natsServerVersion()), core protocol, default settings")
    if brokerList.contains("nio") {
      print("bare SwiftNIO: DESIGN.md's reference fan-out server, nats-server's protocol, driven as nats-server; no auth, storage, offsets or acks")
    }
  }

  private func natsServerVersion() -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: natsServer.contains("/") ? natsServer : "/usr/sbin/\(natsServer)")
    process.arguments = ["--version"]
    let pipe = Pipe()
    process.standardOutput = pipe
    guard (try? process.run()) != nil else { return "nats-server: not found" }
    process.waitUntilExit()
    return String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
  }

  /// Runs one scenario against a fresh `broker`; returns the load generator's figures.
  private func measure(_ scenario: BrokerLoad.Scenario, on broker: String, environment: [String: String]) throws -> [String: Double] {
    var serverArguments = ["broker-server", "--implementation", broker, "--nats-server", natsServer]
    let countsAllocations = countAllocations && Self.isPushline(broker)
    if countsAllocations { serverArguments.append("--count-allocations") }
    if scenario == .churn { serverArguments.append("--metrics") }
    serverArguments += ["--max-subscribes-per-second", "\(maxSubscribesPerSecond)"]
    var dataDir: URL?
    if broker == "sqlite" {
      let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-bench-\(UUID().uuidString)")
      try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
      dataDir = directory
      serverArguments += ["--data-dir", directory.path]
    }
    defer { if let dataDir { try? FileManager.default.removeItem(at: dataDir) } }
    let server = try ChildProcess.start(
      serverArguments, environment: environment, prefix: broker == "nats" ? [] : brokerPrefix.split(separator: " ").map(String.init))
    defer { server.stop() }
    let ready = try server.line(startingWith: "PORT ", timeout: 30).split(separator: " ")
    guard ready.count >= 4, let port = Int(ready[1]), let pid = Int32(ready[3]) else { throw LoadError("bad broker-server output: \(ready)") }
    server.adopt(pid)
    let metricsPort = ready.count >= 6 ? String(ready[5]) : "0"

    var arguments = [
      "broker-load", "--target", Self.isPushline(broker) ? "pushline" : "nats", "--port", "\(port)", "--broker-pid", "\(pid)",
      "--scenario", scenario.rawValue, "--window", "\(window)",
      "--cards-per-topic", "\(scenario == .broadcast ? broadcastCardCount : cardsPerTopic)",
      "--changes-per-publish", "\(changesPerPublish)", "--timeout-seconds", "\(timeout)",
    ]
    if unaryPublishes { arguments.append("--unary-publishes") }
    let perPublish = Self.isPushline(broker) ? changesPerPublish : 1
    switch scenario {
    case .fanout: arguments += ["--subscribers", "\(subscribers)", "--publishes", "\(updates / perPublish)"]
    case .broadcast: arguments += ["--subscribers", "\(subscribers)", "--publishes", "\(broadcastPublishes)"]
    case .idle, .idleWithoutSubscriptions:
      arguments += ["--subscribers", "\(idleConnections)", "--publishes", "0"]
    case .latency:
      arguments += ["--subscribers", "\(subscribers)", "--publishes", "\(rate * rateSeconds / perPublish)", "--rate", "\(Double(rate) / Double(perPublish))"]
    case .churn:
      arguments += ["--subscribers", "\(churnConnections)", "--rate", "\(churnRate)", "--metrics-port", metricsPort] + churn.arguments
    }
    let load = try ChildProcess.start(arguments, environment: environment, prefix: loadPrefix.split(separator: " ").map(String.init))
    defer { load.stop() }
    let line = try load.line(startingWith: "RESULT ", timeout: Double(timeout) + 30)
    var values: [String: Double] = [:]
    for pair in line.dropFirst("RESULT ".count).split(separator: " ") {
      let parts = pair.split(separator: "=")
      if parts.count == 2, let value = Double(parts[1]) { values[String(parts[0])] = value }
    }
    if countsAllocations {
      server.closeInput()
      let mallocs = try server.line(startingWith: "MALLOCS ", timeout: 30).split(separator: " ")
      values["brokerMallocs"] = mallocs.count == 2 ? Double(mallocs[1]) : nil
    }
    return values
  }
}
