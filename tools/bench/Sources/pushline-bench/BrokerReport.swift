import Foundation

/// Prints the broker benchmark's table: one row per figure, one column per broker, then
/// Pushline ÷ nats-server for each Pushline storage and the issue's target.
struct BrokerReport {
  var brokers: [String]
  var scenarios: [BrokerLoad.Scenario]
  var describe: (BrokerLoad.Scenario) -> String
  /// Print a Markdown table (for docs/BENCHMARKS.md) instead of aligned columns.
  var markdown = false

  /// A figure: how to compute it from a broker's raw values, and how to show it.
  struct Row {
    var scenario: BrokerLoad.Scenario
    var label: String
    var value: ([String: Double]) -> Double?
    var format: (Double) -> String
    var ratio = false
    var target = ""
    /// A figure measured only on request (and never for nats-server): the row is left out
    /// when no broker has it, and a broker without it shows "—", not FAILED.
    var isOptional = false
  }

  static var rows: [Row] {
    func key(_ name: String) -> ([String: Double]) -> Double? { { $0[name] } }
    func perDelivery(_ name: String) -> ([String: Double]) -> Double? {
      { values in values[name].flatMap { cpu in values["delivered"].map { cpu / max(1, $0) * 1e6 } } }
    }
    let settled: ([String: Double]) -> Double? = { values in
      values["expected"].flatMap { expected in values["seconds"].map { expected / $0 } }
    }
    let rate: (Double) -> String = { $0 >= 10_000 ? String(format: "%.0fk", $0 / 1_000) : String(format: "%.0f", $0) }
    let count: (Double) -> String = { String(format: "%.0f", $0) }
    let decimal: (Double) -> String = { String(format: "%.1f", $0) }
    let allocations: ([String: Double]) -> Double? = { values in
      values["brokerMallocs"].flatMap { mallocs in values["delivered"].map { mallocs / max(1, $0) } }
    }
    let micros: (Double) -> String = { String(format: "%.2f µs", $0) }
    let millis: (Double) -> String = { String(format: "%.2f ms", $0) }
    let seconds: (Double) -> String = { String(format: "%.2f s", $0) }
    var rows: [Row] = []
    for scenario in [BrokerLoad.Scenario.fanout, .broadcast] {
      rows += [
        Row(scenario: scenario, label: "deliveries/s", value: key("deliveriesPerSecond"), format: rate, ratio: true, target: "≥ 1.5× memory, ≥ 1× SQLite"),
        Row(scenario: scenario, label: "changes delivered", value: key("delivered"), format: count),
        Row(scenario: scenario, label: "coalesced (expected − delivered)", value: key("coalesced"), format: count),
        // What subscribers see: every change published, delivered or coalesced away, reflected
        // in their state, per second until the last subscriber has the final state.
        Row(scenario: scenario, label: "changes settled/s (expected ÷ time)", value: settled, format: rate, ratio: true),
        Row(scenario: scenario, label: "publish acks/s (nats: PUBs/s, no acks)", value: key("publishesPerSecond"), format: rate, ratio: true),
        Row(scenario: scenario, label: "broker CPU per delivery", value: perDelivery("brokerCPUSeconds"), format: micros),
        Row(scenario: scenario, label: "load generator CPU per delivery", value: perDelivery("loadCPUSeconds"), format: micros),
        Row(
          scenario: scenario, label: "broker allocations per delivery (whole life)", value: allocations, format: decimal,
          isOptional: true),
      ]
    }
    rows += [
      Row(scenario: .idle, label: "connect + subscribe all", value: key("connectSeconds"), format: seconds, ratio: true, target: "< 1× (faster)"),
      Row(scenario: .idle, label: "broker memory per connection", value: key("kibPerConnection"), format: { String(format: "%.2f KiB", $0) }, ratio: true, target: "≤ 6 KiB"),
      Row(scenario: .idle, label: "broker RSS before", value: key("rssBeforeKiB"), format: { String(format: "%.0f MiB", $0 / 1024) }),
      Row(scenario: .idle, label: "broker RSS after", value: key("rssAfterKiB"), format: { String(format: "%.0f MiB", $0 / 1024) }),
      Row(scenario: .idleWithoutSubscriptions, label: "connect all", value: key("connectSeconds"), format: seconds, ratio: true),
      Row(scenario: .idleWithoutSubscriptions, label: "broker memory per connection", value: key("kibPerConnection"), format: { String(format: "%.2f KiB", $0) }, ratio: true),
      Row(scenario: .latency, label: "publish→deliver p50", value: key("p50ms"), format: millis, ratio: true),
      Row(scenario: .latency, label: "publish→deliver p99", value: key("p99ms"), format: millis, ratio: true, target: "≤ 5 ms"),
      Row(scenario: .latency, label: "publish→deliver p999", value: key("p999ms"), format: millis, ratio: true),
      Row(scenario: .latency, label: "publish→deliver max", value: key("maxms"), format: millis),
      Row(scenario: .latency, label: "publishes/s achieved", value: key("achievedRate"), format: rate),
      Row(scenario: .latency, label: "coalesced", value: key("coalesced"), format: count),
      Row(scenario: .latency, label: "broker CPU per delivery", value: perDelivery("brokerCPUSeconds"), format: micros),
      Row(scenario: .latency, label: "load generator CPU per delivery", value: perDelivery("loadCPUSeconds"), format: micros),
    ]
    // (e) runs on Pushline's brokers only: nats-server's column shows "—".
    let mebibytes: (Double) -> String = { String(format: "%.1f MiB", $0 / 1024) }
    let perConnection: ([String: Double]) -> Double? = { values in
      values["growthKiBPerRound"].flatMap { growth in values["connectionsPerRound"].map { growth * 1024 / $0 } }
    }
    rows += [
      Row(scenario: .churn, label: "broker RSS after round 1", value: key("rssFirstKiB"), format: mebibytes),
      Row(scenario: .churn, label: "broker RSS after the last round", value: key("rssLastKiB"), format: mebibytes),
      Row(
        scenario: .churn, label: "RSS growth per round, second half (least squares)", value: key("growthKiBPerRound"),
        format: { String(format: "%.1f KiB", $0) }, target: "≈ 0 (flat)"),
      Row(scenario: .churn, label: "RSS growth per dropped connection", value: perConnection, format: { String(format: "%.0f bytes", $0) }),
      Row(scenario: .churn, label: "connections churned/s (whole run)", value: key("churnedPerSecond"), format: rate),
      Row(scenario: .churn, label: "slowest settle (gauges back to the publisher alone)", value: key("maxSettleSeconds"), format: seconds),
      Row(scenario: .churn, label: "rounds that did not settle", value: key("unsettledRounds"), format: count, target: "0"),
      Row(scenario: .churn, label: "connections reset before served, tried again", value: key("retries"), format: count),
      Row(scenario: .churn, label: "bad tokens refused UNAUTHENTICATED", value: key("refusedBadTokens"), format: count),
      Row(scenario: .churn, label: "garbage prefaces closed by the broker", value: key("garbageClosedByBroker"), format: count),
      Row(scenario: .churn, label: "changes delivered", value: key("delivered"), format: count),
      Row(scenario: .churn, label: "changes queued in the broker at a drop, most (its gauge)", value: key("maxQueuedAtDrop"), format: count),
    ].map { row in
      var row = row
      row.isOptional = true
      return row
    }
    return rows
  }

  func print(_ results: [BrokerBenchmark.Cell: Double]) {
    var values: [String: [String: Double]] = [:]  // "scenario/broker" → key → value
    for (cell, value) in results { values["\(cell.scenario.rawValue)/\(cell.broker)", default: [:]][cell.key] = value }
    let ours = brokers.filter { $0 != "nats" }
    let hasNATS = brokers.contains("nats")
    var header = ["scenario", "figure"] + brokers.map { BrokerBenchmark.brokerNames[$0]! }
    if hasNATS { header += ours.map { "\(BrokerBenchmark.brokerNames[$0]!) ÷ nats" } }
    header.append("target")
    var table = [header]
    for scenario in scenarios {
      var first = true
      for row in Self.rows where row.scenario == scenario {
        let figures = brokers.map { broker in values["\(scenario.rawValue)/\(broker)"].flatMap(row.value) }
        if row.isOptional, figures.allSatisfy({ $0 == nil }) { continue }
        var line = [first ? describe(scenario) : "", row.label] + figures.map { $0.map(row.format) ?? (row.isOptional ? "—" : "FAILED") }
        if hasNATS {
          let nats = figures[brokers.firstIndex(of: "nats")!]
          line += ours.map { broker in
            guard row.ratio, let value = figures[brokers.firstIndex(of: broker)!], let nats, nats > 0 else { return "" }
            return String(format: "%.2f×", value / nats)
          }
        }
        line.append(row.target)
        table.append(line)
        first = false
      }
    }
    if markdown {
      for (index, line) in table.enumerated() {
        Swift.print("| " + line.joined(separator: " | ") + " |")
        if index == 0 { Swift.print("|" + String(repeating: " --- |", count: line.count)) }
      }
    } else {
      let widths = header.indices.map { column in table.map { $0[column].count }.max()! }
      for line in table {
        Swift.print(zip(line, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  "))
      }
    }
    if scenarios.contains(.churn) { printChurnRounds(values) }
    // The broker's CPU by kind of thread, for the traffic scenarios.
    for scenario in scenarios where ![.idle, .idleWithoutSubscriptions, .churn].contains(scenario) {
      for broker in brokers {
        guard let figures = values["\(scenario.rawValue)/\(broker)"], let total = figures["brokerCPUSeconds"] else { continue }
        let threads = figures.filter { $0.key.hasPrefix("thread:") }.sorted { $0.value > $1.value }
          .map { String(format: "%@ %.1f s", String($0.key.dropFirst("thread:".count)), $0.value) }
        Swift.print("  \(scenario.rawValue), \(BrokerBenchmark.brokerNames[broker]!): broker CPU \(String(format: "%.1f s", total)) — \(threads.joined(separator: ", "))")
      }
    }
    fflush(nil)  // into a file too, at once: an interrupted run keeps the tables printed so far
  }

  /// (e)'s broker RSS after each round, one column per Pushline broker measured.
  private func printChurnRounds(_ values: [String: [String: Double]]) {
    let measured = brokers.filter { values["churn/\($0)"]?["rssKiB.1"] != nil }
    guard !measured.isEmpty else { return }
    let rounds = measured.compactMap { values["churn/\($0)"]?["rounds"] }.map { Int($0) }.max() ?? 0
    Swift.print("\n(e) broker RSS after each round, MiB:")
    let header = ["round"] + measured.map { BrokerBenchmark.brokerNames[$0]! }
    Swift.print(markdown ? "| " + header.joined(separator: " | ") + " |\n|" + String(repeating: " --- |", count: header.count) : header.joined(separator: "  "))
    for round in 1...max(rounds, 1) {
      let cells = ["\(round)"] + measured.map { broker in
        values["churn/\(broker)"]?["rssKiB.\(round)"].map { String(format: "%.1f", $0 / 1024) } ?? "—"
      }
      Swift.print(markdown ? "| " + cells.joined(separator: " | ") + " |" : cells.joined(separator: "  "))
    }
  }
}
