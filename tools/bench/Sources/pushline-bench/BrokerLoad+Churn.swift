import Foundation
import NIOCore
import NIOPosix
import PushlineBroker
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import Synchronization

/// (e) churn: reconnect churn, as production clients on bad networks cause it — to see whether
/// the broker's memory comes back to a level after connections end, whichever way they end.
///
/// A publisher publishes to the subscribers' topics at `rate` for the whole run. Each round
/// connects `subscribers` connections, `connectConcurrency` at a time, each in a role
/// (``ChurnRole``); holds them `--hold-seconds`; drops them all abruptly; waits until the broker's
/// gauges say it holds nothing of them (``BrokerMetricsProbe/settle(connections:timeout:)``);
/// and reads the broker's `VmRSS`. glibc keeps freed memory, so the verdict is the growth per
/// round after warm-up (the second half of the rounds), not a return to the first figure.
extension BrokerLoad {
  /// What a churn connection does in each round.
  enum ChurnRole {
    /// Subscribes to its own topic — after the first round, from the position it last saw —
    /// receives updates for the hold, then drops: every other one with a plain close (FIN),
    /// the rest with RST.
    case resuming
    /// Subscribes to every topic (up to the broker's 1,000), a snapshot far larger than the
    /// socket buffers, stops reading at its first update, and drops with RST: the broker still
    /// holds queued updates for it when it goes.
    case stalling
    /// Sends its preface and Subscribe in one write and drops with RST as soon as they are
    /// written: the broker serves the call of a connection already gone, or about to be.
    case vanishing
    /// Presents a token that does not verify, a new one each connection: its Subscribe ends
    /// UNAUTHENTICATED, and it closes.
    case badToken
    /// Sends an HTTP request instead of a preface: the broker refuses it and closes.
    case garbage
  }

  /// One connection of a round.
  struct ChurnConnection {
    var role: ChurnRole
    var progress: SubscriberProgress
    /// Nil for a refused subscriber, which closed itself.
    var channel: (any Channel)?
    /// How many times it was reset before it was served, and tried again.
    var retries: Int
  }

  /// What the rounds add up to.
  private struct ChurnTotals {
    var delivered = 0
    var refused = 0
    var retries = 0
    var garbageClosedByBroker = 0
    var unsettledRounds = 0
    var maxQueuedAtDrop = 0.0
    var maxSettleSeconds = 0.0
    var rssKiB: [Int] = []
  }

  /// The role of connection `index`: the first shares stall, vanish, present a bad token,
  /// send garbage; the rest resume.
  private func churnRole(of index: Int) -> ChurnRole {
    let shares: [(ChurnRole, Double)] = [
      (.stalling, churnOptions.stallingShare), (.vanishing, churnOptions.vanishingShare), (.badToken, churnOptions.badTokenShare),
      (.garbage, churnOptions.garbageShare),
    ]
    var bound = 0
    for (role, share) in shares {
      bound += Int((Double(subscribers) * share).rounded())
      if index < bound { return role }
    }
    return .resuming
  }

  func churn() async throws -> [String: Double] {
    guard target == .pushline, metricsPort > 0 else { throw LoadError("churn needs a Pushline broker and its --metrics-port") }
    let probe = BrokerMetricsProbe(port: metricsPort)
    let topics = (0..<subscribers).map(topicName)
    let plan = PublishPlan(
      topics: topics, publishes: Int(rate * timeoutSeconds), changesPerPublish: changesPerPublish, cardsPerTopic: cardsPerTopic,
      window: window, streams: !unaryPublishes, rate: rate)
    let published = Mutex<Result<PublishResult, any Error>?>(nil)
    PushlineLoadClient.publish(port: port, token: publisherToken, plan: plan, on: MultiThreadedEventLoopGroup.singleton.next())
      .whenComplete { result in published.withLock { $0 = result } }
    let roles = (0..<subscribers).map(churnRole)
    var positions = [TopicPosition?](repeating: nil, count: subscribers)
    var totals = ChurnTotals()
    let (start, cpuBefore) = (ProcessStats.monotonicNanos(), ProcessStats.cpuSeconds(brokerPid))
    let rounds = churnOptions.rounds
    for round in 1...rounds {
      Self.phase.withLock { $0 = "churn round \(round): connecting" }
      let connections = try await connectChurn(round: round, roles: roles, positions: positions, topics: topics)
      try await Task.sleep(for: .seconds(churnOptions.holdSeconds))
      if case .failure(let error)? = published.withLock({ $0 }) { throw LoadError("the publisher failed: \(error)") }
      // What the stalled subscribers left queued in the broker (its gauge, updated every second).
      totals.maxQueuedAtDrop = max(totals.maxQueuedAtDrop, try await probe.read()["pushline_queued_changes"] ?? 0)
      Self.phase.withLock { $0 = "churn round \(round): dropping" }
      drop(connections, topics: topics, positions: &positions, totals: &totals)
      Self.phase.withLock { $0 = "churn round \(round): settling" }
      let settled = try await probe.settle(connections: 1, timeout: settleSeconds)  // the publisher's connection stays
      if settled.subscriptions != 0 || settled.connections != 1 { totals.unsettledRounds += 1 }
      totals.maxSettleSeconds = max(totals.maxSettleSeconds, settled.seconds)
      let rss = ProcessStats.residentKiB(brokerPid)
      totals.rssKiB.append(rss)
      FileHandle.standardError.write(
        Data(
          "churn round \(round): RSS \(rss) KiB, settled in \(String(format: "%.2f", settled.seconds)) s (subscriptions \(settled.subscriptions), connections \(settled.connections))\n"
            .utf8))
    }
    let seconds = Double(ProcessStats.monotonicNanos() - start) / 1e9
    var result: [String: Double] = [
      "rounds": Double(rounds), "connectionsPerRound": Double(subscribers), "seconds": seconds,
      "churnedPerSecond": Double(rounds * subscribers) / seconds, "delivered": Double(totals.delivered),
      "refusedBadTokens": Double(totals.refused), "retries": Double(totals.retries), "garbageClosedByBroker": Double(totals.garbageClosedByBroker),
      "unsettledRounds": Double(totals.unsettledRounds), "maxSettleSeconds": totals.maxSettleSeconds,
      "maxQueuedAtDrop": totals.maxQueuedAtDrop,
      "brokerCPUSeconds": ProcessStats.cpuSeconds(brokerPid) - cpuBefore,
      "rssFirstKiB": Double(totals.rssKiB[0]), "rssLastKiB": Double(totals.rssKiB[rounds - 1]),
      "growthKiBPerRound": Self.slope(totals.rssKiB.suffix(rounds - rounds / 2)),
    ]
    for (index, rss) in totals.rssKiB.enumerated() { result["rssKiB.\(index + 1)"] = Double(rss) }
    return result
  }

  /// Drops a round's connections, keeping the position each resuming one reached and what
  /// the round adds to `totals`.
  private func drop(_ connections: [ChurnConnection], topics: [String], positions: inout [TopicPosition?], totals: inout ChurnTotals) {
    for (index, connection) in connections.enumerated() {
      let progress = connection.progress
      totals.delivered += progress.received.load(ordering: .relaxed)
      totals.retries += connection.retries
      if progress.endStatusCode.load(ordering: .relaxed) == Self.unauthenticated { totals.refused += 1 }
      if connection.role == .garbage, connection.channel?.isActive == false { totals.garbageClosedByBroker += 1 }
      guard let channel = connection.channel, connection.role != .vanishing else { continue }
      let epoch = progress.resumeEpoch.load(ordering: .relaxed)
      if connection.role == .resuming, epoch != 0 {
        positions[index] = TopicPosition(topic: topics[index], epoch: epoch, offset: progress.resumeOffset.load(ordering: .relaxed))
      }
      Self.drop(channel, reset: connection.role == .stalling || index % 2 == 1)
    }
  }

  /// Connects a round's connections, `connectConcurrency` at a time; returns once each is
  /// subscribed, refused, or has sent its garbage.
  private func connectChurn(round: Int, roles: [ChurnRole], positions: [TopicPosition?], topics: [String]) async throws
    -> [ChurnConnection]
  {
    let group = MultiThreadedEventLoopGroup.singleton
    let (port, token) = (port, subscriberToken)
    let everyTopic = topics.prefix(1_000).map { TopicPosition(topic: $0) }
    var connections = [ChurnConnection?](repeating: nil, count: roles.count)
    try await withThrowingTaskGroup(of: (Int, ChurnConnection).self) { tasks in
      for index in roles.indices {
        if index >= connectConcurrency, let (done, connection) = try await tasks.next() { connections[done] = connection }
        let role = roles[index]
        let subscription = role == .stalling ? everyTopic : [positions[index] ?? TopicPosition(topic: topics[index])]
        let token = role == .badToken ? "churn-\(round)-\(index)" : token
        tasks.addTask {
          // On a loaded loopback the listen queue overflows now and then, and a connection is
          // reset before it is served, as a bad network does to clients: they try again.
          var retries = 0
          while true {
            let progress = SubscriberProgress(topic: index, recordsLatency: false)
            do {
              let channel = try await Self.connect(role, port: port, token: token, topics: subscription, progress: progress, on: group.next())
              return (index, ChurnConnection(role: role, progress: progress, channel: channel, retries: retries))
            } catch where retries < 2 && (error as? LoadError)?.isRetryable ?? true {
              retries += 1
            }
          }
        }
      }
      for try await (done, connection) in tasks { connections[done] = connection }
    }
    return connections.map { $0! }
  }

  /// Connects one connection in `role`; returns once it is subscribed, refused (with no
  /// channel: it closed itself), or has sent what it sends.
  private static func connect(
    _ role: ChurnRole, port: Int, token: String, topics: [TopicPosition], progress: SubscriberProgress, on loop: any EventLoop
  ) async throws -> (any Channel)? {
    switch role {
    case .resuming:
      return try await PushlineLoadClient.subscribe(port: port, token: token, topics: topics, progress: progress, on: loop).get()
    case .stalling:
      let channel = try await PushlineLoadClient.subscribe(port: port, token: token, topics: topics, progress: progress, on: loop).get()
      try await channel.setOption(ChannelOptions.autoRead, value: false).get()
      return channel
    case .vanishing:
      return try await subscribeAndVanish(port: port, token: token, topics: topics, on: loop).get()
    case .badToken:
      let refused = PushlineLoadClient.subscribe(port: port, token: token, topics: topics, progress: progress, on: loop)
      do {
        _ = try await refused.get()
      } catch where progress.endStatusCode.load(ordering: .relaxed) == unauthenticated {
        return nil
      }
      throw LoadError("a subscriber with a bad token was not refused UNAUTHENTICATED")
    case .garbage:
      return try await sendGarbage(port: port, on: loop).get()
    }
  }

  private static let unauthenticated = Int(StatusCode.unauthenticated.rawValue)

  /// Connects and sends an HTTP request where the broker expects a preface.
  private static func sendGarbage(port: Int, on loop: any EventLoop) -> EventLoopFuture<any Channel> {
    ClientBootstrap(group: loop).connect(host: "127.0.0.1", port: port).flatMap { channel in
      let request = ByteBuffer(string: "GET /metrics HTTP/1.1\r\nHost: pushline\r\n\r\n")
      return channel.writeAndFlush(request).map { channel }
    }
  }

  /// Connects, writes a preface and a Subscribe to `topics` in one write, and resets the
  /// connection once they are written. (The returned channel is closing.)
  private static func subscribeAndVanish(port: Int, token: String, topics: [TopicPosition], on loop: any EventLoop)
    -> EventLoopFuture<any Channel>
  {
    ClientBootstrap(group: loop).connect(host: "127.0.0.1", port: port).flatMap { channel in
      var machine = ClientConnectionStateMachine(configuration: PushlineLoadClient.configuration(token: token))
      var actions = machine.start()
      let (id, start) = machine.startCall(CallStart(method: BrokerService.subscribeMethod))
      guard let id else { return channel.eventLoop.makeFailedFuture(LoadError("the client machine refused the call")) }
      let request = SubscribeRequest(topics: topics).serializedBytes()
      actions += start + machine.send(message: request, compressed: false, callID: id) + machine.halfClose(callID: id)
      var frames = channel.allocator.buffer(capacity: 512)
      for case .write(let elements) in actions {
        for element in elements { FrameEncoder().encode(data: element, out: &frames) }
      }
      return channel.writeAndFlush(frames).map {
        drop(channel, reset: true)
        return channel
      }
    }
  }

  /// Closes `channel` as a client whose network failed: with `reset`, an RST (SO_LINGER 0:
  /// no goodbye, and whatever the socket holds is dropped); otherwise a plain close (FIN).
  private static func drop(_ channel: any Channel, reset: Bool) {
    guard reset, let socket = channel as? any SocketOptionProvider else { return channel.close(promise: nil) }
    socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
  }

  /// The least-squares slope of `values` over their positions: the growth per round.
  static func slope(_ values: ArraySlice<Int>) -> Double {
    let points = values.enumerated().map { (Double($0.offset), Double($0.element)) }
    guard points.count > 1 else { return 0 }
    let (meanX, meanY) = (points.map(\.0).reduce(0, +) / Double(points.count), points.map(\.1).reduce(0, +) / Double(points.count))
    let covariance = points.reduce(0) { $0 + ($1.0 - meanX) * ($1.1 - meanY) }
    let variance = points.reduce(0) { $0 + ($1.0 - meanX) * ($1.0 - meanX) }
    return covariance / variance
  }
}
