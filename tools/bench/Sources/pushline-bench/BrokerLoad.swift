import ArgumentParser
import Foundation
import NIOCore
import NIOPosix
import PushlineSchema
import Synchronization

/// `pushline-bench broker-load`: the load generator, in its own process — one scenario against
/// one broker (Pushline or nats-server) already running. Prints one `RESULT key=value …` line;
/// exits non-zero with the reason on stderr when the run fails, stalls or times out.
struct BrokerLoad: AsyncParsableCommand {
  static let configuration = CommandConfiguration(commandName: "broker-load", shouldDisplay: false)

  enum Target: String, ExpressibleByArgument { case pushline, nats }
  enum Scenario: String, ExpressibleByArgument, CaseIterable {
    case fanout, broadcast, idle, latency, churn
    /// (c) with connections that only handshake: the benchmark's `--idle-breakdown`.
    case idleWithoutSubscriptions = "idle-without-subscriptions"
  }

  @Option var target: Target
  @Option var port: Int
  @Option var brokerPid: Int32
  @Option var scenario: Scenario
  @Option var subscribers = 1_000
  @Option(help: "Publish calls (Pushline PublishRequests, nats-server PUBs).") var publishes = 1_000_000
  @Option var changesPerPublish = 1
  @Option var cardsPerTopic = 8
  @Option var window = 8_192
  @Flag var unaryPublishes = false
  @Option(help: "Publishes per second; 0 for as fast as possible.") var rate = 0.0
  @Option var connectConcurrency = 256
  @Option(help: "Fail when nothing is delivered for this long.") var stallSeconds = 20.0
  @Option(help: "Fail when the whole scenario takes longer.") var timeoutSeconds = 600.0
  @OptionGroup var churnOptions: ChurnOptions
  @Option(help: "Churn: the broker's metrics port, whose gauges say when a round's drops have settled.") var metricsPort = 0
  @Option(help: "Churn: seconds to wait for the broker to settle after a round's drops.") var settleSeconds = 15.0

  /// The phase a timeout reports.
  static let phase = Mutex("starting")

  func run() async throws {
    AllocationCounter.execWithoutInterposer()
    ProcessStats.exitWhenOrphaned()
    ProcessStats.raiseFileLimit()
    let timeout = timeoutSeconds
    Thread.detachNewThread {
      Thread.sleep(forTimeInterval: timeout)
      FileHandle.standardError.write(Data("broker-load: timed out after \(timeout) s while \(Self.phase.withLock { $0 })\n".utf8))
      _exit(2)
    }
    let result: [String: Double]
    do {
      switch scenario {
      case .idle, .idleWithoutSubscriptions: result = try await idle()
      case .churn: result = try await churn()
      case .fanout, .broadcast, .latency: result = try await traffic()
      }
    } catch {
      FileHandle.standardError.write(Data("broker-load: \(target.rawValue) \(scenario.rawValue): \(error)\n".utf8))
      _exit(1)
    }
    let line = "RESULT " + result.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ") + "\n"
    FileHandle.standardOutput.write(Data(line.utf8))
    _exit(0)  // the kernel closes the connections; no need to wait for thousands of channel closes
  }

  var subscriberToken: String { ProcessInfo.processInfo.environment["PUSHLINE_BENCH_SUBSCRIBER_TOKEN"] ?? "" }
  var publisherToken: String { ProcessInfo.processInfo.environment["PUSHLINE_BENCH_PUBLISHER_TOKEN"] ?? "" }

  func topicName(_ index: Int) -> String {
    if scenario == .broadcast { return "broadcast" }
    return target == .pushline ? "driver/\(index)" : "driver.\(index)"
  }

  /// Connects `count` subscribers, `connectConcurrency` at a time, subscriber `i` on topic
  /// `topicOf(i)`; returns their progress and the seconds it took until all were subscribed.
  private func connectSubscribers(_ count: Int, topicOf: (Int) -> Int, latency: Bool) async throws -> ([SubscriberProgress], [any Channel], Double) {
    let group = MultiThreadedEventLoopGroup.singleton
    let progress = (0..<count).map { SubscriberProgress(topic: topicOf($0), recordsLatency: latency) }
    let start = ProcessStats.monotonicNanos()
    var channels: [any Channel] = []
    channels.reserveCapacity(count)
    let (target, port, token) = (target, port, subscriberToken)
    // idle-without-subscriptions: connections only handshake (nats-server: CONNECT, PING).
    let names = (0..<count).map { scenario == .idleWithoutSubscriptions ? nil : topicName(progress[$0].topic) }
    try await withThrowingTaskGroup(of: (any Channel).self) { tasks in
      for index in 0..<count {
        if index >= connectConcurrency, let channel = try await tasks.next() { channels.append(channel) }
        let (name, subscriber) = (names[index], progress[index])
        tasks.addTask {
          let loop = group.next()
          switch target {
          case .pushline:
            let topics = name.map { [TopicPosition(topic: $0)] } ?? []
            return try await PushlineLoadClient.subscribe(port: port, token: token, topics: topics, progress: subscriber, on: loop).get()
          case .nats: return try await NATSClient.subscribe(port: port, subject: name, progress: subscriber, on: loop).get()
          }
        }
      }
      for try await channel in tasks { channels.append(channel) }
    }
    return (progress, channels, Double(ProcessStats.monotonicNanos() - start) / 1e9)
  }

  /// (c): idle subscribers — time to connect and subscribe them all, and the broker's resident
  /// memory before and after.
  private func idle() async throws -> [String: Double] {
    let before = ProcessStats.residentKiB(brokerPid)
    let cpuBefore = ProcessStats.cpuSeconds(brokerPid)
    Self.phase.withLock { $0 = "connecting \(subscribers) idle subscribers" }
    let (_, channels, seconds) = try await connectSubscribers(subscribers, topicOf: { $0 }, latency: false)
    let cpu = ProcessStats.cpuSeconds(brokerPid) - cpuBefore
    try await Task.sleep(for: .seconds(1))  // let the broker settle
    let after = ProcessStats.residentKiB(brokerPid)
    withExtendedLifetime(channels) {}
    return [
      "connectSeconds": seconds, "rssBeforeKiB": Double(before), "rssAfterKiB": Double(after),
      "kibPerConnection": Double(after - before) / Double(subscribers), "brokerCPUSeconds": cpu,
    ]
  }

  /// (a), (b), (d): subscribers, then one publisher; waits until every subscriber has all its
  /// topic's changes (Pushline: its position reached the topic's last acknowledged offset, so
  /// coalesced changes count as done; nats-server: every message arrived).
  private func traffic() async throws -> [String: Double] {
    let topicCount = scenario == .broadcast ? 1 : subscribers
    let changes = target == .pushline ? changesPerPublish : 1
    let plan = PublishPlan(
      topics: (0..<topicCount).map(topicName), publishes: publishes, changesPerPublish: changes, cardsPerTopic: cardsPerTopic,
      window: window, streams: !unaryPublishes, rate: rate > 0 ? rate : nil)
    Self.phase.withLock { $0 = "connecting \(subscribers) subscribers" }
    let (progress, channels, connectSeconds) = try await connectSubscribers(
      subscribers, topicOf: { scenario == .broadcast ? 0 : $0 }, latency: scenario == .latency)
    defer { withExtendedLifetime(channels) {} }
    let expected = progress.map { plan.publishes(toTopic: $0.topic) * changes }
    let (brokerCPUBefore, ownCPUBefore) = (ProcessStats.cpuSeconds(brokerPid), ProcessStats.ownCPUSeconds())
    let threadsBefore = ProcessStats.threadCPUSeconds(brokerPid)
    Self.phase.withLock { $0 = "publishing" }
    let published = Mutex<Result<PublishResult, any Error>?>(nil)
    let loop = MultiThreadedEventLoopGroup.singleton.next()
    let future =
      switch target {
      case .pushline: PushlineLoadClient.publish(port: port, token: publisherToken, plan: plan, on: loop)
      case .nats: NATSClient.publish(port: port, plan: plan, on: loop)
      }
    future.whenComplete { result in published.withLock { $0 = result } }

    var lastTotal = -1
    var lastProgress = ProcessStats.monotonicNanos()
    var publishResult: PublishResult?
    while true {
      try await Task.sleep(for: .milliseconds(5))
      if publishResult == nil, let result = published.withLock({ $0 }) {
        publishResult = try result.get()
        Self.phase.withLock { $0 = "waiting for the last deliveries" }
      }
      if let failure = progress.lazy.compactMap({ $0.failure.withLock { $0 } }).first {
        throw LoadError("a subscriber failed: \(failure)")
      }
      let total = progress.reduce(0) { $0 + $1.received.load(ordering: .relaxed) }
      if let publishResult {
        let complete = progress.indices.allSatisfy { index in
          let subscriber = progress[index]
          return switch target {
          case .pushline: subscriber.position.load(ordering: .acquiring) >= publishResult.finalOffsets[subscriber.topic]
          case .nats: subscriber.position.load(ordering: .acquiring) >= expected[index]
          }
        }
        if complete { break }
      }
      let now = ProcessStats.monotonicNanos()
      if total != lastTotal {
        lastTotal = total
        lastProgress = now
      } else if Double(now - lastProgress) / 1e9 > stallSeconds {
        throw LoadError(
          "stalled: \(total) of \(expected.reduce(0, +)) changes delivered, nothing for \(stallSeconds) s; publisher \(publishResult == nil ? "not done" : "done")")
      }
    }
    let publish = publishResult!
    let brokerCPU = ProcessStats.cpuSeconds(brokerPid) - brokerCPUBefore
    let ownCPU = ProcessStats.ownCPUSeconds() - ownCPUBefore
    let end = progress.map { $0.lastDeliveryNanos.load(ordering: .relaxed) }.max() ?? publish.endNanos
    let delivered = progress.reduce(0) { $0 + $1.received.load(ordering: .relaxed) }
    let expectedTotal = expected.reduce(0, +)
    let seconds = Double(max(end, publish.endNanos) - publish.startNanos) / 1e9
    let publishSeconds = Double(publish.endNanos - publish.startNanos) / 1e9
    var result: [String: Double] = [
      "connectSeconds": connectSeconds, "delivered": Double(delivered), "expected": Double(expectedTotal),
      "coalesced": Double(expectedTotal - delivered), "seconds": seconds, "deliveriesPerSecond": Double(delivered) / seconds,
      "publishes": Double(publishes), "publishSeconds": publishSeconds, "publishesPerSecond": Double(publishes) / publishSeconds,
      "brokerCPUSeconds": brokerCPU, "loadCPUSeconds": ownCPU, "brokerRSSKiB": Double(ProcessStats.residentKiB(brokerPid)),
    ]
    // Where the broker's CPU went, by kind of thread (exited threads are not counted).
    for (name, after) in ProcessStats.threadCPUSeconds(brokerPid) {
      let used = after - (threadsBefore[name] ?? 0)
      if used >= 0.01 { result["thread:\(name.replacingOccurrences(of: " ", with: "_").replacingOccurrences(of: "=", with: "_"))"] = used }
    }
    if scenario == .latency {
      var latencies = progress.flatMap { $0.latencies.withLock { $0 } }
      latencies.sort()
      func percentile(_ fraction: Double) -> Double {
        latencies.isEmpty ? .nan : Double(latencies[min(latencies.count - 1, Int(Double(latencies.count) * fraction))]) / 1e6
      }
      result["p50ms"] = percentile(0.5)
      result["p99ms"] = percentile(0.99)
      result["p999ms"] = percentile(0.999)
      result["maxms"] = latencies.last.map { Double($0) / 1e6 } ?? .nan
      result["achievedRate"] = Double(publishes) / publishSeconds
    }
    return result
  }
}
