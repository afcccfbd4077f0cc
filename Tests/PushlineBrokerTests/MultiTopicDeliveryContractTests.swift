@testable import PushlineBroker
import PushlineSchema
import PushlineTesting
import Synchronization
import Testing

/// The delivery contract of one subscription to several topics, under random load: publishes to
/// random topics (some sharing a commit), reads of random sizes while the connection takes bytes
/// or not (so that runs stack, are spelled out and coalesce, the topics sharing one queue and
/// its bound), snapshots in parts, overflows and resnapshots, watermarks, new epochs (a client
/// showed a topic's history lost), and drops — some in the middle of a take — resumed per topic
/// from each replica's position. Each topic must end with
/// exactly the publishers' state, at its top, never having seen a breach of the contract.
@Suite("Delivery contract across topics, property-tested")
struct MultiTopicDeliveryContractTests {
  /// Every fourth seed publishes cards of 60 KB, enough of them that snapshots go in parts.
  @Test(.timeLimit(.minutes(1)), arguments: 0..<48)
  func randomLoadOverSeveralTopicsReachesTheExactState(seed: Int) async throws {
    var random = SplitMix64(seed: UInt64(seed) &* 0x2545_F491 &+ 7)
    let large = seed % 4 == 3
    let topics = (0..<(3 + Int(random.next() % 2))).map { "t\($0)" }
    let cardsPerTopic = large ? 28 : 3 + random.next() % 6  // few cards: many versions to coalesce
    let bound = 6 + Int(random.next() % 5)
    let clock = ManualWallClock()
    let storage = CountingStorage()
    let broker = try await Broker(
      storage: storage,
      configuration: BrokerConfiguration(
        maxTombstonesPerTopic: 4, maxQueuedChangesPerSubscription: bound, nowMillis: clock.function))
    var truth: [String: [String: TrackerCard]] = Dictionary(uniqueKeysWithValues: topics.map { ($0, [:]) })
    var replicas: [String: TopicReplica] = Dictionary(uniqueKeysWithValues: topics.map { ($0, TopicReplica()) })
    var log: [String] = []  // the steps, for a failure's message
    var version = 0

    func apply(_ updates: some Sequence<EncodedTopicUpdate>) {
      for update in updates {
        guard replicas[update.topic] != nil else {
          Issue.record("seed \(seed): an update of topic \(update.topic), not subscribed to")
          continue
        }
        replicas[update.topic]!.apply(update)
      }
    }
    func resume() throws -> Subscription {
      try broker.subscribe(
        SubscribeRequest(
          topics: topics.map { TopicPosition(topic: $0, epoch: replicas[$0]!.epoch, offset: replicas[$0]!.position) }),
        for: reader)
    }
    /// A publish of a few changes to a random topic, already counted in `truth`.
    func randomPublish() -> (topic: String, upserts: [TrackerCard], removals: [String]) {
      let topic = topics[Int(random.next() % UInt64(topics.count))]
      let (upserts, removals) = randomChanges(&random, cardCount: cardsPerTopic, large: large, version: &version, truth: &truth[topic]!)
      log.append("publish \(topic) \(upserts.map(\.cardID)) -\(removals)")
      return (topic, upserts, removals)
    }

    /// Takes all `subscription` has: the queue, and the snapshots due (overflowed topics, new epochs).
    func drain(_ subscription: Subscription) async throws {
      while true {
        if !subscription.topicsNeedingSnapshot.isEmpty {
          apply(try await broker.nextUpdates(for: subscription))
          continue
        }
        guard let updates = try subscription.takeReadyFromTheWire(maxChanges: 512, nowMillis: clock.now), !updates.isEmpty
        else { break }
        apply(updates)
      }
    }

    var subscription = try resume()
    for step in 0..<400 {
      switch random.next() % 14 {
      case 0...3:  // publish a few changes to a topic
        let publish = randomPublish()
        try await broker.publish(publish.topic, publish.upserts, removing: publish.removals)
      case 4:  // 2–4 publishes to random topics sharing one commit, in a known order
        let publishes = (0..<(2 + random.next() % 3)).map { _ in randomPublish() }
        log.append("(one commit)")
        storage.holdCommits()
        // In order, so that offsets follow the order `truth` applied them in.
        var answers = [PublishAnswer]()
        for publish in publishes {
          answers.append(broker.enqueuePublish(publish.topic, publish.upserts, removing: publish.removals))
          if answers.count == 1 { await storage.waitUntilHeld() }
        }
        storage.release()
        for answer in answers { _ = try await answer.value }
      case 5...7:  // read a bite
        let limit = Int(1 + random.next() % 5)
        if !subscription.topicsNeedingSnapshot.isEmpty, random.next() % 2 == 0 {
          apply(try broker.readyUpdates(for: subscription).map(readOffTheWire))
          log.append("read with resnapshots")
        } else if random.next() % 6 == 0 {
          // The connection drops in the middle of a take: only some of its updates arrive.
          let updates = try subscription.takeReadyFromTheWire(maxChanges: limit, nowMillis: clock.now) ?? []
          let arrived = Int(random.next() % UInt64(updates.count + 1))
          apply(updates.prefix(arrived))
          broker.unsubscribe(subscription)
          subscription = try resume()
          log.append("read \(limit), \(arrived) of \(updates.count) updates arrive, resume")
        } else {
          apply(try subscription.takeReadyFromTheWire(maxChanges: limit, nowMillis: clock.now) ?? [])
          log.append("read \(limit)")
        }
      case 8...9:  // the connection takes bytes, or stops
        let writable = random.next() % 3 != 0
        subscription.connectionWritabilityChanged(writable)
        log.append("writable \(writable)")
      case 10:  // the connection drops; each topic resumes from its replica's position
        broker.unsubscribe(subscription)
        subscription = try resume()
        log.append("resume")
      case 13:  // the topic gets a new epoch (once per run), stored with the publish that follows
        let topic = topics[Int(random.next() % UInt64(topics.count))]
        broker.startNewEpoch(of: topic)
        let (upserts, removals) = randomChanges(&random, cardCount: cardsPerTopic, large: large, version: &version, truth: &truth[topic]!)
        try await broker.publish(topic, upserts, removing: removals)
        log.append("new epoch of \(topic), publish \(upserts.map(\.cardID)) -\(removals), drain")
        // The open subscription follows the topic into its epoch, without a resume.
        try await drain(subscription)
        let epoch = broker.state.withLock { $0.topics[topic]?.epoch }
        #expect(replicas[topic]!.epoch == epoch, "seed \(seed) step \(step): \(topic) not in its new epoch")
      default:  // time passes: watermarks
        clock.advance(by: .seconds(31))
        broker.tick()
        log.append("tick")
      }
      #expect(subscription.queuedChanges <= bound, "seed \(seed) step \(step): \(subscription.queuedChanges) queued")
      if replicas.values.contains(where: { !$0.violations.isEmpty }) { break }
    }
    try await drain(subscription)
    let tops = broker.state.withLock { state in topics.map { (state.topics[$0]?.topOffset ?? 0, state.topics[$0]?.epoch) } }
    for (topic, (top, epoch)) in zip(topics, tops) {
      let replica = replicas[topic]!
      let context = "seed \(seed) \(topic); last steps: \(log.suffix(30).joined(separator: "; "))"
      #expect(replica.violations.isEmpty, "\(replica.violations.prefix(5)); \(context)")
      let wrong = Set(replica.cards.keys).union(truth[topic]!.keys).filter { replica.cards[$0] != truth[topic]![$0] }
      #expect(wrong.isEmpty, "cards \(wrong.sorted()) differ; \(context)")
      #expect(replica.position == top, "position \(String(describing: replica.position)), top \(top); \(context)")
      #expect(epoch == nil || replica.epoch == epoch, "epoch \(String(describing: replica.epoch)), topic's \(String(describing: epoch)); \(context)")
    }
  }
}
