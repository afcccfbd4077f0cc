@testable import PushlineBroker
import PushlineSchema
import PushlineTesting
import Synchronization
import Testing

/// The delivery contract under random load: a subscriber that reads in random-sized bites,
/// lags so its queue coalesces (or, while its connection takes bytes, stacks commits' runs),
/// and loses its connection at random points, resuming each time from the last position it
/// applied, ends with exactly the publishers' state — and never sees an offset at or below one
/// it has applied.
@Suite("Delivery contract, property-tested")
struct DeliveryContractPropertyTests {
  /// Applies everything `subscription` still has to `replica`, snapshots of overflowed topics
  /// included.
  static func drain(
    _ subscription: Subscription, of broker: Broker, into replica: inout TopicReplica, nowMillis: Int64
  ) async throws {
    while true {
      if !subscription.topicsNeedingSnapshot.isEmpty {
        for update in try await broker.nextUpdates(for: subscription) { replica.apply(update) }
        continue
      }
      guard let updates = try subscription.takeReadyFromTheWire(maxChanges: 512, nowMillis: nowMillis), !updates.isEmpty else { break }
      for update in updates { replica.apply(update) }
    }
  }

  /// Seeds from 14 on publish cards of 60 KB, enough of them that a snapshot goes in parts.
  @Test(arguments: 0..<20)
  func randomDropsAndCoalescingReachTheExactState(seed: Int) async throws {
    var random = SplitMix64(seed: UInt64(seed) &* 0x9E37_79B9 &+ 17)
    let large = seed >= 14
    let clock = ManualWallClock()
    let broker = try await Broker(
      storage: InMemoryBrokerStorage(),
      configuration: BrokerConfiguration(maxTombstonesPerTopic: 4, maxQueuedChangesPerSubscription: 6, nowMillis: clock.function))
    var truth: [String: TrackerCard] = [:]
    var replica = TopicReplica()
    var subscription = try broker.subscribe("t")
    var version = 0

    for _ in 0..<300 {
      switch random.next() % 10 {
      case 0...4:  // publish a few changes
        let changes = randomChanges(&random, cardCount: large ? 24 : 12, large: large, version: &version, truth: &truth)
        try await broker.publish("t", changes.upserts, removing: changes.removals)
      case 5...7:  // read a bite, the connection taking bytes or not
        subscription.connectionWritabilityChanged(random.next() % 2 == 0)
        let limit = Int(1 + random.next() % 4)
        for update in try subscription.takeReadyFromTheWire(maxChanges: limit, nowMillis: clock.now) ?? [] {
          replica.apply(update)
          // Every commit is in the queues once its publish returns: a complete update at the
          // top leaves the copy exactly the publishers' state.
          if update.isComplete, update.throughOffset == broker.state.withLock({ $0.topics["t"]?.topOffset }) {
            #expect(replica.cards == truth, "seed \(seed): inexact at complete update \(update.throughOffset)")
          }
        }
      case 8:  // the connection drops; resume from the last applied position
        broker.unsubscribe(subscription)
        subscription = try broker.subscribe("t", epoch: replica.epoch, offset: replica.position)
      default:  // time passes: watermarks
        clock.advance(by: .seconds(31))
        broker.tick()
      }
      #expect(subscription.queuedChanges <= 6, "seed \(seed)")
    }
    try await Self.drain(subscription, of: broker, into: &replica, nowMillis: clock.now)
    #expect(replica.violations.isEmpty, "seed \(seed): \(replica.violations)")
    #expect(replica.cards == truth, "seed \(seed)")
    #expect(replica.position == broker.state.withLock { $0.topics["t"]!.topOffset })
  }

  /// The same contract when several publishes share a commit (the storage holds one while
  /// they arrive), so that a commit carries several versions of a card: coalesced once for all
  /// subscribers, and into queues that lag, overflow and resume.
  @Test(.timeLimit(.minutes(1)), arguments: 0..<15)
  func publishesSharingACommitKeepTheContract(seed: Int) async throws {
    var random = SplitMix64(seed: UInt64(seed) &* 0x51_7CC1 &+ 3)
    let clock = ManualWallClock()
    let storage = CountingStorage()
    let broker = try await Broker(
      storage: storage,
      configuration: BrokerConfiguration(maxTombstonesPerTopic: 4, maxQueuedChangesPerSubscription: 6, nowMillis: clock.function))
    var truth: [String: TrackerCard] = [:]
    var replica = TopicReplica()
    var subscription = try broker.subscribe("t")
    var version = 0
    var publishes = 0

    for _ in 0..<60 {
      switch random.next() % 6 {
      case 0...2:  // a burst of 3–6 publishes; all but the first share one commit
        // (The publishers' state follows their offsets, known once they are committed.)
        var unordered: [String: TrackerCard] = [:]
        let bursts = (0..<(3 + random.next() % 4)).map { _ in
          randomChanges(&random, cardCount: 6, large: false, version: &version, truth: &unordered)
        }
        storage.holdCommits()
        var answers = [PublishAnswer]()
        for burst in bursts {
          answers.append(broker.enqueuePublish("t", burst.upserts, removing: burst.removals))
          if answers.count == 1 { await storage.waitUntilHeld() }
        }
        storage.release()
        var offsets: [Int: Int64] = [:]
        for (index, answer) in answers.enumerated() { offsets[index] = try await answer.value.firstOffset }
        publishes += bursts.count
        // The publishers' state: the publishes in the order of their offsets.
        for index in bursts.indices.sorted(by: { offsets[$0]! < offsets[$1]! }) {
          for card in bursts[index].upserts { truth[card.cardID] = card }
          for id in bursts[index].removals { truth[id] = nil }
        }
      case 3...4:  // read a bite
        let limit = Int(1 + random.next() % 4)
        if !subscription.topicsNeedingSnapshot.isEmpty {
          for update in try await broker.nextUpdates(for: subscription) { replica.apply(update) }
        }
        for update in try subscription.takeReadyFromTheWire(maxChanges: limit, nowMillis: clock.now) ?? [] { replica.apply(update) }
      default:  // the connection drops; resume from the last applied position
        broker.unsubscribe(subscription)
        subscription = try broker.subscribe("t", epoch: replica.epoch, offset: replica.position)
      }
    }
    try await Self.drain(subscription, of: broker, into: &replica, nowMillis: clock.now)
    #expect(storage.commits.withLock { $0 } < publishes)  // commits were shared
    #expect(replica.violations.isEmpty, "seed \(seed): \(replica.violations)")
    #expect(replica.cards == truth, "seed \(seed)")
    #expect(replica.position == broker.state.withLock { $0.topics["t"]!.topOffset })
  }
}

extension DeliveryContractPropertyTests {
  /// Subscribes and resumes racing a publisher on other threads, on a topic of thousands of
  /// cards whose removals are pruned often: a start prepared outside the lock meets commits
  /// made while it was built (its changes since, found among the topic's recent changes), a
  /// floor raised past it, or a queue too full for its catch-up — and every subscriber still
  /// sees offsets only rise, and ends with exactly the publisher's state.
  @Test(.timeLimit(.minutes(1)), arguments: 0..<4)
  func subscribesRacingCommitsKeepTheContract(seed: Int) async throws {
    let clock = ManualWallClock()
    let broker = try await Broker(
      storage: InMemoryBrokerStorage(),
      configuration: BrokerConfiguration(
        maxTombstonesPerTopic: seed % 2 == 0 ? 4 : 512, maxQueuedChangesPerSubscription: 64, nowMillis: clock.function))
    let cardCount = UInt64(TopicState.minCardsForRecentChanges * 3 / 2)
    var seeding = [String: TrackerCard]()
    try await broker.publish("t", (0..<cardCount).map { card("c\($0)", 0) })
    for index in 0..<cardCount { seeding["c\(index)"] = card("c\(index)", 0) }
    let published = Flag()
    let (truth, replicas) = try await withThrowingTaskGroup(of: TopicReplica?.self) { group in
      for subscriber in 0..<3 {
        group.addTask {
          var random = SplitMix64(seed: UInt64(seed * 10 + subscriber))
          var replica = TopicReplica()
          while !published.isSet {
            // A fresh start one time in four, else a resume from the last position applied.
            let fresh = random.next() % 4 == 0
            if fresh { replica = TopicReplica() }
            let subscription = try broker.subscribe("t", epoch: replica.epoch, offset: replica.position)
            for _ in 0..<(1 + random.next() % 6) {
              if !subscription.topicsNeedingSnapshot.isEmpty {
                for update in try await broker.nextUpdates(for: subscription) { replica.apply(update) }
              }
              let limit = Int(1 + random.next() % 64)
              for update in try subscription.takeReadyFromTheWire(maxChanges: limit, nowMillis: clock.now) ?? [] { replica.apply(update) }
              await Task.yield()
            }
            broker.unsubscribe(subscription)
          }
          return replica
        }
      }
      var random = SplitMix64(seed: UInt64(seed) &+ 1000)
      var truth = seeding
      var version = 0
      for _ in 0..<500 {
        let changes = randomChanges(&random, cardCount: cardCount, large: false, version: &version, truth: &truth)
        try await broker.publish("t", changes.upserts, removing: changes.removals)
      }
      published.set()
      var replicas: [TopicReplica] = []
      for try await replica in group { replicas.append(replica!) }
      return (truth, replicas)
    }
    for var replica in replicas {
      let subscription = try broker.subscribe("t", epoch: replica.epoch, offset: replica.position)
      try await Self.drain(subscription, of: broker, into: &replica, nowMillis: clock.now)
      #expect(replica.violations.isEmpty, "seed \(seed): \(replica.violations.prefix(5))")
      let wrong = Set(truth.keys).union(replica.cards.keys).filter { truth[$0] != replica.cards[$0] }
      #expect(wrong.isEmpty, "seed \(seed): \(wrong.count) cards differ from the publisher's, such as \(wrong.sorted().prefix(5))")
    }
  }
}

/// A flag one task raises and others look at.
private final class Flag: Sendable {
  private let value = Atomic(false)
  var isSet: Bool { value.load(ordering: .acquiring) }
  func set() { value.store(true, ordering: .releasing) }
}

/// A commit's changes are coalesced once for all subscribers; that must leave every queue as
/// appending them one by one would have.
@Suite("Coalescing a commit once")
struct CommitCoalescingTests {
  @Test(arguments: 0..<50)
  func aBatchCoalescedOnceQueuesAsItsChangesOneByOne(seed: Int) {
    var random = SplitMix64(seed: UInt64(seed) &+ 99)
    func records(from first: Int64, count: Int) -> [CardRecord] {
      (0..<count).map { index in
        let id = "c\(random.next() % 5)"
        let card = random.next() % 4 == 0 ? nil : card(id, Int(first) + index)
        return CardRecord(cardID: id, offset: first + Int64(index), card: card.map(EncodedCard.init), changedAtMillis: 0)
      }
    }
    var oneByOne = OutboundQueue()
    for record in records(from: 1, count: Int(random.next() % 4)) { oneByOne.append(record.change, topic: "t") }
    var coalescedOnce = oneByOne
    let batch = records(from: 10, count: 1 + Int(random.next() % 12))
    for record in batch { oneByOne.append(record.change, topic: "t") }
    for record in Broker.latestVersions(of: batch) { coalescedOnce.append(record.change, topic: "t") }
    #expect(coalescedOnce.take(limit: 100) { _ in 1 } == oneByOne.take(limit: 100) { _ in 1 })
  }
}
