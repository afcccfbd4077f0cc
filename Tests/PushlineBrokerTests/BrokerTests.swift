@testable import PushlineBroker
import MetricsTestKit
import PushlineRPC
import PushlineSchema
import PushlineWire
import Synchronization
import PushlineTesting
import Testing

@Suite("Broker: publish, resume, snapshots, coalescing")
struct BrokerTests {
  let clock = ManualWallClock()

  func makeBroker(_ configure: (inout BrokerConfiguration) -> Void = { _ in }) async throws -> Broker {
    var configuration = BrokerConfiguration(nowMillis: clock.function)
    configure(&configuration)
    return try await Broker(storage: InMemoryBrokerStorage(), configuration: configuration)
  }

  /// A broker whose storage holds its commits until released.
  func brokerHoldingCommits() async throws -> (Broker, CountingStorage) {
    let storage = CountingStorage()
    storage.holdCommits()
    return (try await Broker(storage: storage, configuration: BrokerConfiguration(nowMillis: clock.function)), storage)
  }

  /// What the subscription has ready now, without waiting.
  func ready(_ subscription: Subscription, limit: Int = 512) throws -> [TopicUpdate] {
    try (subscription.takeReadyFromTheWire(maxChanges: limit, nowMillis: clock.now) ?? []).map(TopicUpdate.init(decoding:))
  }

  @Test func publishAssignsIncreasingOffsetsAndDeliversThem() async throws {
    let broker = try await makeBroker()
    let subscription = try broker.subscribe("driver/1")
    let first = try ready(subscription)
    #expect(first.count == 1 && first[0].isSnapshot && first[0].changes.isEmpty && first[0].throughOffset == 0)

    let one = try await broker.publish("driver/1", [card("a", 1), card("b", 1)])
    let two = try await broker.publish("driver/1", [card("a", 2)], removing: ["b"])
    #expect((one.firstOffset, one.lastOffset, two.firstOffset, two.lastOffset) == (1, 2, 3, 4))
    #expect(one.epoch == two.epoch && one.epoch == first[0].epoch)

    var replica = TopicReplica()
    for update in first + (try ready(subscription)) { replica.apply(update) }
    #expect(replica.violations.isEmpty)
    #expect(replica.cards == ["a": card("a", 2)])
    #expect(replica.position == 4)
  }

  /// A topic whose snapshot would not fit a message: a subscription gets it in parts, each
  /// well under the limit — a snapshot of the first cards, positioned at its last, then the
  /// rest as changes — and ends at the top with every card; a resume from the first part's
  /// position brings exactly the rest. GetCards, which cannot split it, refuses it.
  @Test func aSnapshotTooLargeForAMessageGoesInParts() async throws {
    let broker = try await makeBroker()
    let cards = (1...80).map { titled("c\($0)", bytes: 60_000) }
    for batch in stride(from: 0, to: cards.count, by: 10) { try await broker.publish("t", Array(cards[batch..<batch + 10])) }
    #expect(throws: RPCError.self) { try broker.cards(in: "t", for: reader) }

    let subscription = try broker.subscribe("t")
    var parts: [EncodedTopicUpdate] = []
    while let more = try subscription.takeReadyFromTheWire(maxChanges: 512, nowMillis: clock.now), !more.isEmpty { parts += more }
    #expect(parts.count > 1 && parts.allSatisfy { $0.encodedSize() < ConnectionLimits.defaults.maxMessageSize / 2 })
    #expect(parts[0].isSnapshot && parts[0].throughOffset < 80 && parts[0].snapshotThroughOffset == 80 && parts.last?.throughOffset == 80)
    #expect(parts.dropFirst().allSatisfy { $0.snapshotThroughOffset == nil })
    #expect(parts.flatMap(\.changes).map(\.cardID) == cards.map(\.cardID))
    var replica = TopicReplica()
    for part in parts { replica.apply(part) }
    #expect(replica.violations.isEmpty && replica.cards == Dictionary(uniqueKeysWithValues: cards.map { ($0.cardID, $0) }))

    let resumed = try broker.subscribe("t", epoch: parts[0].epoch, offset: parts[0].throughOffset)
    var rest: [EncodedTopicUpdate] = []
    while let more = try resumed.takeReadyFromTheWire(maxChanges: 512, nowMillis: clock.now), !more.isEmpty { rest += more }
    #expect(rest.flatMap(\.changes).map(\.cardID) == parts.dropFirst().flatMap(\.changes).map(\.cardID))
  }

  /// The rest of a snapshot sent in parts does not count toward the queue's bound (a snapshot
  /// does not): commits arriving meanwhile queue behind it, and the subscriber gets every
  /// card, not the first part again and again.
  @Test func theRestOfASnapshotInPartsDoesNotCountTowardTheBound() async throws {
    let broker = try await makeBroker { $0.maxQueuedChangesPerSubscription = 10 }
    for batch in 0..<4 { try await broker.publish("t", (1...10).map { titled("c\(batch * 10 + $0)", bytes: 60_000) }) }
    let subscription = try broker.subscribe("t")
    var replica = TopicReplica()
    for round in 0..<3 {
      for update in try await broker.nextUpdates(for: subscription) { replica.apply(update) }
      try await broker.publish("t", [card("x", round)])
      #expect(subscription.topicsNeedingSnapshot.isEmpty)
    }
    while let more = try subscription.takeReadyFromTheWire(maxChanges: 512, nowMillis: clock.now), !more.isEmpty {
      for update in more { replica.apply(update) }
    }
    #expect(replica.violations.isEmpty && replica.cards.count == 41 && replica.cards["x"] == card("x", 2))
  }

  /// A subscriber whose connection takes bytes is not sent a snapshot for two commits of the
  /// same cards that fit its bound once merged.
  @Test func stackedVersionsThatFitMergedDoNotOverflow() async throws {
    let broker = try await makeBroker { $0.maxQueuedChangesPerSubscription = 10 }
    let subscription = try broker.subscribe("t")
    _ = try subscription.takeReadyFromTheWire(maxChanges: 512, nowMillis: clock.now)
    subscription.connectionWritabilityChanged(true)
    try await broker.publish("t", (0..<6).map { card("c\($0)", 1) })
    try await broker.publish("t", (0..<6).map { card("c\($0)", 2) })
    #expect(subscription.topicsNeedingSnapshot.isEmpty)
    #expect(try ready(subscription).flatMap(\.changes).map(\.card) == (0..<6).map { card("c\($0)", 2) })
  }

  @Test func resumeIsServedCompactedFromTheCardTable() async throws {
    let broker = try await makeBroker()
    let start = try await broker.publish("t", [card("a", 1), card("b", 1), card("c", 1)])
    try await broker.publish("t", [card("a", 2)])
    try await broker.publish("t", [card("a", 3)], removing: ["b"])

    let subscription = try broker.subscribe("t", epoch: start.epoch, offset: 3)
    let updates = try ready(subscription)
    #expect(updates.count == 1)
    #expect(!updates[0].isSnapshot)
    #expect(updates[0].changes.map(\.cardID) == ["a", "b"])
    #expect(updates[0].changes.map(\.offset) == [5, 6])
    #expect(updates[0].changes[1].card == nil)
    #expect(updates[0].throughOffset == 6)
  }

  @Test func resumeAtTheTopConfirmsThePositionAtOnce() async throws {
    let broker = try await makeBroker()
    let response = try await broker.publish("t", [card("a", 1)])
    let updates = try ready(try broker.subscribe("t", epoch: response.epoch, offset: 1))
    #expect(updates.count == 1 && updates[0].changes.isEmpty && !updates[0].isSnapshot && updates[0].throughOffset == 1)
  }

  /// A subscribe resuming topics "a" and "b" from their first change (offset 1), after
  /// `missing` more cards were published to each (a1…, b1…).
  static func resumeOfTwoTopics(on broker: Broker, missing: (a: Int, b: Int)) async throws -> SubscribeRequest {
    let a = try await broker.publish("a", [card("a0", 1)])
    let b = try await broker.publish("b", [card("b0", 1)])
    try await broker.publish("a", (1...missing.a).map { card("a\($0)", 1) })
    try await broker.publish("b", (1...missing.b).map { card("b\($0)", 1) })
    return SubscribeRequest(topics: [
      TopicPosition(topic: "a", epoch: a.epoch, offset: 1), TopicPosition(topic: "b", epoch: b.epoch, offset: 1),
    ])
  }

  /// The catch-ups of one subscription's topics share its queue's room: a resume whose
  /// catch-up would take more than half of what the earlier topics' catch-ups leave gets a
  /// snapshot instead, so that changes made meanwhile still fit behind it.
  @Test func catchUpsShareTheQueuesRoom() async throws {
    let broker = try await makeBroker { $0.maxQueuedChangesPerSubscription = 8 }
    let subscription = try broker.subscribe(try await Self.resumeOfTwoTopics(on: broker, missing: (4, 3)), for: reader)
    let updates = try ready(subscription)
    #expect(updates.map(\.topic) == ["a", "b"] && updates.map(\.isSnapshot) == [false, true])
    #expect(updates[0].changes.count == 4 && updates[1].changes.count == 4 && updates.map(\.throughOffset) == [5, 4])
  }

  /// A catch-up prepared outside the lock that no longer fits once the changes made meanwhile
  /// to the subscription's other topics are queued is not queued past the bound: its topic gets
  /// a snapshot, built anew outside the lock, queued before the subscription is handed out,
  /// and counted as no overflow.
  @Test func aCatchUpThatNoLongerFitsGetsASnapshotBuiltOutsideTheLock() async throws {
    let metrics = TestMetrics()
    let broker = try await makeBroker {
      $0.maxQueuedChangesPerSubscription = 8
      $0.metrics = BrokerMetrics(factory: metrics)
    }
    let prepared = try broker.prepareSubscription(try await Self.resumeOfTwoTopics(on: broker, missing: (2, 3)), for: reader)
    #expect(prepared.starts.map { $0?.catchUp?.count } == [2, 3])
    try await broker.publish("a", (3...6).map { card("a\($0)", 1) })  // between the two steps
    let subscription = try broker.open(prepared, maxMessageSize: 1 << 20)
    #expect(subscription.topicsNeedingSnapshot.isEmpty)
    let updates = try ready(subscription)
    #expect(updates.filter { $0.topic == "a" }.map(\.isSnapshot).allSatisfy { !$0 })
    #expect(updates.filter { $0.topic == "a" }.flatMap(\.changes).map(\.cardID) == (1...6).map { "a\($0)" })
    #expect(updates.filter { $0.topic == "b" }.map(\.isSnapshot) == [true] && updates.last?.throughOffset == 4)
    #expect(try metrics.expectCounter("pushline_queue_overflows_total").totalValue == 0)
  }

  /// A topic first published to between the subscribe's two steps was empty at the first, in
  /// the epoch it has now: a client that read it before resumes without a snapshot and gets
  /// the first publish's changes, complete at the top.
  @Test func aTopicMadeBetweenTheStepsFollowsItsEmptyStart() async throws {
    let broker = try await makeBroker()
    let epoch = try broker.cards(in: "new", for: reader).epoch
    let prepared = try broker.prepareSubscription(
      SubscribeRequest(topics: [TopicPosition(topic: "new", epoch: epoch, offset: 0)]), for: reader)
    #expect(prepared.starts.count == 1 && prepared.starts[0] == nil)
    try await broker.publish("new", [card("a", 1), card("b", 1)])
    let updates = try ready(try broker.open(prepared, maxMessageSize: 1 << 20))
    #expect(!updates.contains(where: \.isSnapshot) && updates.allSatisfy { $0.epoch == epoch })
    #expect(updates.flatMap(\.changes).map(\.cardID) == ["a", "b"] && updates.last?.isComplete == true && updates.last?.throughOffset == 2)
  }

  /// A start prepared outside the lock whose offset a prune passed meanwhile (a removal it
  /// would need is gone) is no good: the topic gets a snapshot, built anew outside the lock.
  @Test func aStartPassedByAPruneMeanwhileGetsASnapshot() async throws {
    let broker = try await makeBroker { $0.maxTombstonesPerTopic = 0 }
    let first = try await broker.publish("t", (0..<20).map { card("c\($0)", 1) })
    let prepared = try broker.prepareSubscription(
      SubscribeRequest(topics: [TopicPosition(topic: "t", epoch: first.epoch, offset: first.lastOffset)]), for: reader)
    #expect(prepared.starts.first??.catchUp?.isEmpty == true)
    let removal = try await broker.publish("t", [], removing: (0..<20).map { "c\($0)" })  // past 16: pruned
    // The prune, computed at the removals' commit, commits in the next batch, which may run on
    // another thread after the removals are answered: with or before this publish's.
    try await broker.publish("u", [card("x", 1)])
    #expect(broker.state.withLock { $0.topics["t"]!.floorOffset } > first.lastOffset)
    let subscription = try broker.open(prepared, maxMessageSize: 1 << 20)
    let updates = try ready(subscription)
    #expect(updates.count == 1 && updates[0].isSnapshot && updates[0].changes.isEmpty && updates[0].throughOffset == removal.lastOffset)
  }

  @Test(arguments: [
    ("another epoch", Int64(12345), Int64(2)), ("below the floor", nil, Int64(1)), ("ahead of the top", nil, Int64(99)),
  ])
  func positionsThatCannotResumeGetASnapshot(_ name: String, epoch: Int64?, offset: Int64) async throws {
    let broker = try await makeBroker { $0.maxTombstonesPerTopic = 0 }
    var response = try await broker.publish("t", [card("a", 1), card("b", 1)])
    // 17 removals pass the limit of 0 by the minimum slack of 16: all tombstones go, the floor rises.
    let removed = (0..<17).map { "r\($0)" }
    try await broker.publish("t", removed.map { card($0, 1) })
    response = try await broker.publish("t", [], removing: removed)
    // The prune is committed by the committer right after the publish it follows: wait for it.
    var floor = broker.state.withLock { $0.topics["t"]!.floorOffset }
    for _ in 0..<100_000 where floor != response.lastOffset {
      await Task.yield()
      floor = broker.state.withLock { $0.topics["t"]!.floorOffset }
    }
    #expect(floor == response.lastOffset)

    // Through the broker: ahead of the top, the topic gets a new epoch, whose snapshot may be due by now.
    let subscription = try broker.subscribe("t", epoch: epoch ?? response.epoch, offset: offset)
    let updates = try broker.readyUpdates(for: subscription).map { try TopicUpdate(decoding: try readOffTheWire($0)) }
    #expect(updates.count == 1 && updates[0].isSnapshot)
    #expect(Set(updates[0].changes.map(\.cardID)) == ["a", "b"])
    #expect(updates[0].throughOffset == response.lastOffset)
  }

  /// A topic no one publishes to again still loses its tombstones past the maximum age: the
  /// periodic duties look at every topic once a minute, and commit the prune; its floor rises.
  @Test func tombstonesOfAQuietTopicGoOnceTheyAreTooOld() async throws {
    let broker = try await makeBroker { $0.maxTombstoneAge = .seconds(60) }
    try await broker.publish("quiet", [card("a", 1), card("b", 1)])
    let removal = try await broker.publish("quiet", [], removing: ["a"])
    broker.tick()  // a look now finds the tombstone young
    clock.advance(by: .seconds(30))
    broker.tick()
    clock.advance(by: .seconds(31))
    broker.tick()  // 61 s old, and a minute since the last look
    var floor = broker.state.withLock { $0.topics["quiet"]!.floorOffset }
    for _ in 0..<100_000 where floor != removal.lastOffset {  // the prune's commit runs in a task
      await Task.yield()
      floor = broker.state.withLock { $0.topics["quiet"]!.floorOffset }
    }
    #expect(floor == removal.lastOffset)
    #expect(broker.state.withLock { $0.topics["quiet"]!.records.keys.sorted() } == ["b"])
  }

  @Test func expiredCardsLeaveSnapshotsButAreNeverPushed() async throws {
    let broker = try await makeBroker { $0.watermarkInterval = .seconds(3600) }
    let nowSeconds = clock.now / 1000
    try await broker.publish("t", [card("soon", 1, expiresAt: nowSeconds + 60), card("later", 1, expiresAt: nowSeconds + 7200)])
    let subscription = try broker.subscribe("t")
    #expect(try ready(subscription)[0].changes.count == 2)

    clock.advance(by: .seconds(61))
    broker.tick()
    #expect(try ready(subscription).isEmpty)  // nothing pushed at expiry
    let snapshot = try broker.cards(in: "t", for: reader)
    #expect(snapshot.changes.map(\.cardID) == ["later"])
  }

  @Test func aNewerVersionReplacesTheQueuedOneAndMovesToTheBack() async throws {
    let broker = try await makeBroker()
    let subscription = try broker.subscribe("t")
    _ = try ready(subscription)
    try await broker.publish("t", [card("a", 1)])
    try await broker.publish("t", [card("b", 1)])
    try await broker.publish("t", [card("a", 2)])
    let updates = try ready(subscription)
    #expect(updates.count == 1)
    #expect(updates[0].changes.map(\.cardID) == ["b", "a"])
    #expect(updates[0].changes.map(\.offset) == [2, 3])
    #expect(updates[0].changes[1].card == card("a", 2))
    #expect(subscription.state.withLock { $0.queue.coalescedCount } == 1)
  }

  @Test func aBatchCutShortClaimsOnlyItsLastOffset() async throws {
    let broker = try await makeBroker()
    let subscription = try broker.subscribe("t")
    _ = try ready(subscription)
    try await broker.publish("t", (0..<5).map { card("c\($0)", 1) })
    let first = try ready(subscription, limit: 2)
    #expect(first[0].changes.map(\.offset) == [1, 2] && first[0].throughOffset == 2)
    let rest = try ready(subscription, limit: 10)
    #expect(rest[0].changes.map(\.offset) == [3, 4, 5] && rest[0].throughOffset == 5)
  }

  @Test func anOverflowingQueueFallsBackToASnapshot() async throws {
    let broker = try await makeBroker { $0.maxQueuedChangesPerSubscription = 3 }
    let subscription = try broker.subscribe("t")
    var replica = TopicReplica()
    for update in try ready(subscription) { replica.apply(update) }
    for index in 0..<10 { try await broker.publish("t", [card("c\(index)", 1)]) }
    #expect(subscription.state.withLock { $0.queue.changeCount } <= 3)

    let updates = try await broker.nextUpdates(for: subscription)
    #expect(updates.count == 1 && updates[0].isSnapshot && updates[0].throughOffset == 10)
    for update in updates { replica.apply(update) }
    try await broker.publish("t", [card("c0", 2)])
    for update in try ready(subscription) { replica.apply(update) }
    #expect(replica.violations.isEmpty)
    #expect(replica.cards.count == 10 && replica.cards["c0"] == card("c0", 2) && replica.position == 11)
  }

  @Test func aRetryWithTheSameKeyIsAnsweredWithoutApplyingAgain() async throws {
    let broker = try await makeBroker()
    let first = try await broker.publish("t", [card("a", 1)], key: "k1")
    let retry = try await broker.publish("t", [card("a", 1)], key: "k1")
    #expect(retry.replayed == true && retry.firstOffset == first.firstOffset && retry.lastOffset == first.lastOffset)
    #expect(broker.state.withLock { $0.topics["t"]!.topOffset } == 1)

    clock.advance(by: .seconds(601))
    let late = try await broker.publish("t", [card("a", 1)], key: "k1")
    #expect(late.replayed == nil && late.firstOffset == 2)
  }

  /// A key reused within its window for other changes — other cards, another version, a
  /// removal in place of an upsert — is refused, not answered as a replay that would drop them
  /// while telling the publisher they were applied; the same changes are still a replay.
  @Test func aKeyReusedForOtherChangesIsRefused() async throws {
    let broker = try await makeBroker()
    let first = try await broker.publish("t", [card("a", 1)], key: "k1")
    for other: (upserts: [TrackerCard], removals: [String]) in [
      ([card("a", 1), card("b", 1), card("c", 1)], []), ([card("a", 2)], []), ([], ["a"]), ([card("b", 1)], []),
    ] {
      await expectStatus(.invalidArgument) { try await broker.publish("t", other.upserts, removing: other.removals, key: "k1") }
    }
    let retry = try await broker.publish("t", [card("a", 1)], key: "k1")
    #expect(retry.replayed == true && retry.firstOffset == first.firstOffset)
    #expect(broker.state.withLock { $0.topics["t"]!.topOffset } == 1)
  }

  /// A retry with other changes than its original, arriving while the original is being
  /// committed, is refused rather than joined.
  @Test(.timeLimit(.minutes(1))) func aKeyReusedWhileItsOriginalIsInFlightIsRefused() async throws {
    let (broker, storage) = try await brokerHoldingCommits()
    let original = broker.enqueuePublish("t", [card("a", 1)], key: "k1")
    await storage.waitUntilHeld()
    // Answered at once when refused; had it joined the original, it would wait for the commit.
    let retry = broker.enqueuePublish("t", [card("a", 2)], key: "k1")
    #expect(retry.isAnswered)
    storage.release()
    await expectStatus(.invalidArgument) { try await retry.value }
    #expect(try await original.value.firstOffset == 1)
    let snapshot = try broker.cards(in: "t", for: reader)
    #expect(try snapshot.changes.map { try $0.card?.decoded() } == [card("a", 1)] && snapshot.throughOffset == 1)
  }

  /// Publishes waiting for a slow storage hold at most the configured bytes: past them a
  /// publish is refused with RESOURCE_EXHAUSTED and a hint, assigned no offset (its topic not
  /// even made), and publishes are taken again once the commit is done. A first publish is
  /// taken whatever its size.
  @Test(.timeLimit(.minutes(1))) func publishesWaitingForStorageAreBoundedByBytes() async throws {
    let storage = CountingStorage()
    storage.holdCommits()
    let broker = try await Broker(
      storage: storage, configuration: BrokerConfiguration(maxInFlightPublishBytes: 900, nowMillis: clock.function))
    let big = titled("big", bytes: 1000)
    let first = broker.enqueuePublish("t", [big])  // over the bound alone: taken
    await storage.waitUntilHeld()
    let second = broker.enqueuePublish("t", [card("a", 1)])
    #expect(second.isAnswered)
    let refusal = await #expect(throws: RPCError.self) { try await second.value }
    #expect(refusal?.code == .resourceExhausted && refusal?.retryAfterMillis != nil)
    let refusedTopic = broker.enqueuePublish("u2", [card("a", 1)])
    await #expect(throws: RPCError.self) { try await refusedTopic.value }
    #expect(broker.state.withLock { $0.topics["u2"] } == nil)
    // One held already, behind its connection's token check, is taken past the bound.
    let held = PublishAnswer()
    broker.publish(
      EncodedPublishRequest(encoding: PublishRequest(topic: "h", changes: [CardChange(upserting: card("a", 1))])), for: publisher,
      isHeldAlready: true, completion: Answered(held.complete))
    #expect(!held.isAnswered)
    storage.release()
    #expect(try await first.value.lastOffset == 1)
    #expect(try await held.value.lastOffset == 1)
    let small = (0..<3).map { broker.enqueuePublish("u", [card("c\($0)", 1)]) }  // about 215 bytes each, kept
    var offsets: [Int64] = []
    for answer in small { offsets.append(try await answer.value.lastOffset) }
    #expect(offsets == [1, 2, 3])
    #expect(try await broker.publish("t", [card("a", 1)]).firstOffset == 2)  // no offset went to the refused one
  }

  /// Tombstones go once older than the maximum age, checked as the topic is published to — a
  /// younger one stays, even when an older removal of a card since upserted again is gone.
  @Test func tombstonesGoOnceOlderThanTheMaximumAge() async throws {
    let broker = try await makeBroker { $0.maxTombstoneAge = .seconds(60) }
    func tombstones() -> Set<String> {
      broker.state.withLock { Set($0.topics["t"]!.records.values.filter(\.isTombstone).map(\.cardID)) }
    }
    /// Two publishes of another card: the first finds what to prune, the second's commit drops it.
    func publishTwice() async throws {
      try await broker.publish("t", [card("other", 1)])
      try await broker.publish("t", [card("other", 2)])
    }
    try await broker.publish("t", [card("x", 1), card("y", 1), card("z", 1)])
    try await broker.publish("t", [], removing: ["x"])  // at 0 s
    clock.advance(by: .seconds(10))
    try await broker.publish("t", [card("x", 2)])  // x lives again: its old removal is no tombstone
    clock.advance(by: .seconds(10))
    try await broker.publish("t", [], removing: ["y"])  // at 20 s
    clock.advance(by: .seconds(20))
    try await broker.publish("t", [], removing: ["z"])  // at 40 s
    clock.advance(by: .seconds(25))  // 65 s: y is 45 s old, z 25 s
    try await publishTwice()
    #expect(tombstones() == ["y", "z"])
    clock.advance(by: .seconds(20))  // 85 s: y is 65 s old
    try await publishTwice()
    #expect(tombstones() == ["z"])
    clock.advance(by: .seconds(20))  // 105 s: z is 65 s old
    try await publishTwice()
    #expect(tombstones().isEmpty)
  }

  /// A window, an interval or a limit too large for the broker's `Int64` milliseconds or `Int`
  /// counts — a caller's `.seconds(.max)` — means forever or never, not a crash.
  @Test func windowsIntervalsAndLimitsPastTheirIntegersAreForever() async throws {
    let broker = try await makeBroker {
      $0.idempotencyWindow = .seconds(Int64.max)
      $0.watermarkInterval = .seconds(Int64.max)
      $0.maxTombstoneAge = .seconds(Int64.max)
      $0.maxTombstonesPerTopic = .max
    }
    let first = try await broker.publish("t", [card("a", 1)], key: "k1")
    let subscription = try broker.subscribe("t")
    try await broker.publish("t", [], removing: ["a"])  // a tombstone, held against the limit and the age
    _ = try ready(subscription)
    clock.advance(by: .seconds(10 * 365 * 86_400))
    broker.tick()
    #expect(try ready(subscription).isEmpty)  // no watermark
    let retry = try await broker.publish("t", [card("a", 1)], key: "k1")
    #expect(retry.replayed == true && retry.firstOffset == first.firstOffset)
    #expect(broker.state.withLock { $0.topics["t"]!.tombstoneCount } == 1)
  }

  /// A count limit set below 1, given to the initializer or set later, is taken as 1, not a
  /// crash (a range of 1 to 0) nor a subscription that never moves on (updates of no change).
  @Test func countLimitsBelowOneAreTakenAsOne() async throws {
    var configuration = BrokerConfiguration(maxChangesPerUpdate: 0, maxChangesPerPublish: -3, nowMillis: clock.function)
    configuration.maxTopicsPerSubscription = 0
    #expect((configuration.maxChangesPerUpdate, configuration.maxChangesPerPublish, configuration.maxTopicsPerSubscription) == (1, 1, 1))
    let broker = try await Broker(storage: InMemoryBrokerStorage(), configuration: configuration)
    let subscription = try broker.subscribe("t")
    _ = try await broker.nextUpdates(for: subscription)  // the empty snapshot
    try await broker.publish("t", [card("a", 1)])
    try await broker.publish("t", [card("b", 1)])
    await expectStatus(.invalidArgument) { try await broker.publish("t", [card("c", 1), card("d", 1)]) }
    await expectStatus(.invalidArgument) {
      try broker.subscribe(SubscribeRequest(topics: [TopicPosition(topic: "t"), TopicPosition(topic: "u")]), for: reader)
    }
    #expect(try await broker.nextUpdates(for: subscription).map { $0.changes.map(\.cardID) } == [["a"]])
    #expect(try await broker.nextUpdates(for: subscription).map { $0.changes.map(\.cardID) } == [["b"]])
  }

  /// Expired idempotency records are forgotten a bounded number per commit, oldest first, not
  /// all at once; a record lives the whole window, to the millisecond; and a key recorded again
  /// once its record expired keeps its new record when the old one's turn to go comes.
  @Test func expiredIdempotencyRecordsAreForgottenAFewPerCommit() async throws {
    let broker = try await makeBroker { $0.idempotencyWindow = .seconds(10) }
    let records = { broker.intake.withLock { $0.publishRecords.count } }
    let perCommit = Broker.publishRecordsForgottenPerCommit
    for index in 0..<(2 * perCommit) { try await broker.publish("t", [card("c", index)], key: "k\(index)") }
    try await broker.publish("t", [card("a", 1)], key: "again")
    clock.advance(by: .seconds(10))
    #expect(try await broker.publish("t", [card("c", 0)], key: "k0").replayed == true)  // at the window's end
    clock.advance(by: .milliseconds(1))
    let again = try await broker.publish("t", [card("a", 2)], key: "again")
    #expect(again.replayed == nil && again.firstOffset == Int64(2 * perCommit) + 2)
    #expect(records() == perCommit + 1)  // k0… forgotten by that commit, "again" recorded anew
    try await broker.publish("t", [card("b", 1)])
    #expect(records() == 1)
    try await broker.publish("t", [card("b", 2)])  // forgets the first record of "again"
    #expect(records() == 1)
    let retry = try await broker.publish("t", [card("a", 2)], key: "again")
    #expect(retry.replayed == true && retry.firstOffset == again.firstOffset)
  }

  /// A catch-up's complete last part says when it was made, not when it left, if newer changes
  /// of its topic wait behind it: the client's copy is exact as of then ("verified at" then).
  /// With nothing behind it, it is exact as of when it left.
  @Test func aCatchUpIsVerifiedAsOfWhenItWasMadeWhenNewerChangesFollow() async throws {
    let broker = try await makeBroker()
    let first = try await broker.publish("t", [card("a", 1), card("b", 1)])
    let made = clock.now
    let behind = try broker.subscribe("t", epoch: first.epoch, offset: 1)
    try await broker.publish("t", [card("b", 2)])
    let alone = try broker.subscribe("t", epoch: first.epoch, offset: 1)  // made after the change
    clock.advance(by: .seconds(5))
    let updates = try ready(behind)
    #expect(updates.map(\.complete) == [true, true] && updates.map(\.throughOffset) == [2, 3])
    #expect(updates.map(\.serverTimeMillis) == [made, clock.now])
    let taken = try ready(alone)
    #expect(taken.map(\.complete) == [true] && taken.map(\.serverTimeMillis) == [clock.now])
  }

  /// A small message limit with tiny cards under a long topic name: every part of a snapshot
  /// fits, the changes' own fields counted, where only the cards' and IDs' bytes were (an
  /// update of 1,043 bytes ended a 1,024-byte stream).
  @Test func updatesOfTinyCardsFitASmallMessageLimit() async throws {
    let broker = try await makeBroker()
    let topic = String(repeating: "t", count: 200)
    let ids = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".map(String.init)  // the tiniest cards
    try await broker.publish(topic, ids.map { TrackerCard(cardID: $0, priority: 1, isValid: true) })
    // A snapshot in parts, measured change by change (a commit's run is measured exactly).
    let subscription = try broker.subscribe(SubscribeRequest(topics: [TopicPosition(topic: topic)]), for: reader, maxMessageSize: 700)
    var updates: [EncodedTopicUpdate] = []
    while let taken = try subscription.takeReadyFromTheWire(maxChanges: 512, nowMillis: clock.now), !taken.isEmpty { updates += taken }
    #expect(updates.flatMap(\.changes).count == ids.count && updates.count > 1)
    #expect(updates.allSatisfy { $0.encodedSize() <= 700 })
  }

  /// Past the most records kept, the oldest are forgotten before their window ends: a retry
  /// of one is applied again, of a younger one still answered as a replay.
  @Test func pastTheMostRecordsKeptTheOldestAreForgotten() async throws {
    let broker = try await makeBroker { $0.maxPublishRecords = 3 }
    for index in 0..<5 { try await broker.publish("t", [card("c\(index)", 1)], key: "k\(index)") }
    #expect(broker.intake.withLock { $0.publishRecords.count } == 3)
    #expect(try await broker.publish("t", [card("c0", 1)], key: "k0").replayed == nil)
    #expect(try await broker.publish("t", [card("c4", 1)], key: "k4").replayed == true)
  }

  /// A negative idempotency window, however long, counts as none: a key is forgotten as soon
  /// as the clock moves on.
  @Test func aNegativeIdempotencyWindowCountsAsNone() async throws {
    let broker = try await makeBroker { $0.idempotencyWindow = .seconds(Int64.min) }
    try await broker.publish("t", [card("a", 1)], key: "k1")
    clock.advance(by: .milliseconds(1))
    #expect(try await broker.publish("t", [card("a", 1)], key: "k1").replayed == nil)
  }

  /// A retry arriving while its original is being committed (the acknowledgement seemed slow)
  /// waits for the original's answer instead of being applied a second time.
  @Test(.timeLimit(.minutes(1))) func aRetryDuringItsOriginalsCommitIsNotAppliedAgain() async throws {
    let (broker, storage) = try await brokerHoldingCommits()
    let first = broker.enqueuePublish("t", [card("a", 1)], key: "k1")
    await storage.waitUntilHeld()
    let second = broker.enqueuePublish("t", [card("a", 1)], key: "k1")
    #expect(!second.isAnswered && broker.intake.withLock { $0.publishes.committing.first?.retries.count } == 1)
    storage.release()
    let (original, retry) = (try await first.value, try await second.value)
    #expect(original.replayed == nil && original.firstOffset == 1)
    #expect(retry.replayed == true && retry.firstOffset == 1 && retry.lastOffset == 1)
    #expect(broker.state.withLock { $0.topics["t"]!.topOffset } == 1)
    #expect(storage.commits.withLock { $0 } == 1)
  }

  /// A retry arriving while its original waits for the next commit joins it there too; and
  /// the index of the keys in flight follows the publishes, from waiting to committing to
  /// answered: it holds each once, and none once they are answered, so that a retry after a
  /// failed commit is a publish anew.
  @Test(.timeLimit(.minutes(1))) func aRetryJoinsItsOriginalWaitingForACommitAndKeysInFlightAreIndexed() async throws {
    let (broker, storage) = try await brokerHoldingCommits()
    let keysInFlight = { broker.intake.withLock { $0.publishes.keyCount } }
    let committing = broker.enqueuePublish("t", [card("c0", 1)], key: "k0")
    await storage.waitUntilHeld()
    let waiting = (1...100).map { broker.enqueuePublish("t", [card("c\($0)", 1)], key: "k\($0)") }
    let retried = broker.enqueuePublish("t", [card("c50", 1)], key: "k50")
    #expect(broker.intake.withLock { $0.publishes.pending.count == 100 && $0.publishes.pending.contains { !$0.retries.isEmpty } })
    #expect(keysInFlight() == 101)
    storage.release()
    var answers = ["k0": try await committing.value, "retry": try await retried.value]
    for (index, answer) in zip(1..., waiting) { answers["k\(index)"] = try await answer.value }
    #expect(answers["k50"]?.replayed == nil && answers["retry"]?.replayed == true)
    #expect(answers["retry"]?.firstOffset == answers["k50"]?.firstOffset && answers["retry"]?.epoch == answers["k50"]?.epoch)
    #expect(broker.state.withLock { $0.topics["t"]!.topOffset } == 101 && keysInFlight() == 0)
    storage.failing.withLock { $0 = true }
    await expectStatus(.unavailable) { try await broker.publish("t", [card("x", 1)], key: "x") }
    #expect(keysInFlight() == 0)
    storage.failing.withLock { $0 = false }
    #expect(try await broker.publish("t", [card("x", 1)], key: "x").replayed == nil)
  }

  /// While a commit is under way (held by the storage), 199 publishes queue; they share the
  /// next commit, no two publishes of a topic share an offset, and each topic's subscriber gets
  /// every change of the shared commit once, in offset order.
  @Test(.timeLimit(.minutes(1))) func publishesArrivingDuringACommitShareTheNextOne() async throws {
    let (broker, storage) = try await brokerHoldingCommits()
    let subscriptions = try (0..<4).map { try broker.subscribe("t\($0)") }
    for subscription in subscriptions { _ = try ready(subscription) }  // the empty snapshots
    var answers = [broker.enqueuePublish("t0", [card("c0", 1)])]
    await storage.waitUntilHeld()
    answers += (1..<200).map { broker.enqueuePublish("t\($0 % 4)", [card("c\($0)", 1)]) }
    #expect(broker.intake.withLock { $0.publishes.pending.count } == 199)
    storage.release()
    var responses: [PublishResponse] = []
    for answer in answers { responses.append(try await answer.value) }
    for topic in 0..<4 {
      let offsets = responses.filter { $0.epoch == broker.state.withLock { $0.topics["t\(topic)"]!.epoch } }.map(\.firstOffset)
      #expect(offsets.sorted() == Array(1...50))
    }
    #expect(storage.commits.withLock { $0 } == 2)
    for (topic, subscription) in subscriptions.enumerated() {
      let offsets = try ready(subscription, limit: 1000).flatMap(\.changes).compactMap(\.offset)
      #expect(offsets == Array(1...50), "t\(topic)")
    }
  }

  /// A transport passes its event loop: the commit starts there once the publishes read in
  /// the same burst have all been handed over, and takes them all.
  @Test func aCommitStartedOnAnExecutorTakesThePublishesMadeBeforeItRuns() async throws {
    let storage = CountingStorage()
    let broker = try await Broker(storage: storage, configuration: BrokerConfiguration(nowMillis: clock.function))
    let subscription = try broker.subscribe("t")
    _ = try ready(subscription)  // the empty snapshot
    let executor = QueuedTaskExecutor()
    let answers = Mutex<[Result<PublishResponse, RPCError>]>([])
    for index in 1...3 {
      broker.publish(
        EncodedPublishRequest(encoding: PublishRequest(topic: "t", changes: [CardChange(upserting: card("c\(index)", 1))])), for: publisher,
        committingOn: executor, completion: Answered { answer in answers.withLock { $0.append(answer) } })
    }
    #expect(executor.queuedCount == 1)
    #expect(storage.commits.withLock { $0 } == 0)
    #expect(answers.withLock { $0.isEmpty })
    executor.runQueuedJobs()
    #expect(storage.commits.withLock { $0 } == 1)
    #expect(try answers.withLock { $0 }.map { try $0.get().firstOffset } == [1, 2, 3])
    #expect(try ready(subscription).flatMap(\.changes).compactMap(\.offset) == [1, 2, 3])
  }

  /// The snapshot or catch-up of a topic with many cards is built off the caller's executor
  /// (a connection's event loop, shared with other connections); a small topic's, in place.
  @Test(.timeLimit(.minutes(1))) func startsOfLargeTopicsAreBuiltOffTheCallersExecutor() async throws {
    let broker = try await makeBroker()
    try await broker.publish("big", (0...Broker.largeTopicCards).map { card("c\($0)", 1) })
    try await broker.publish("small", [card("a", 1)])
    for (topic, inPlace) in [("small", true), ("big", false)] {
      let executor = QueuedTaskExecutor()
      let (built, build) = AsyncStream<Bool>.makeStream()
      Task(executorPreference: executor) {
        try await broker.buildingStarts(of: [topic]) { () throws(RPCError) in build.yield(executor.isRunningTheCaller) }
      }
      executor.runQueuedJobs()
      var results = built.makeAsyncIterator()
      #expect(await results.next() == inPlace, "\(topic)")
    }
  }

  /// A slow subscriber's overflowed topic with many cards gets its new snapshot from a task
  /// off the transport's event loop: the pull that finds the overflow sends nothing, and the
  /// drain is woken once the snapshot is queued.
  @Test(.timeLimit(.minutes(1))) func anOverflowOfALargeTopicIsResynchronizedOffTheCaller() async throws {
    final class CountingPump: ResponsePump {
      let wakes = Mutex(0)
      let signal = CountSignal()
      func wake() { signal.count(wakes.withLock { $0 += 1; return $0 }) }
    }
    let broker = try await makeBroker { $0.maxQueuedChangesPerSubscription = 2 }
    let cards = (0...Broker.largeTopicCards).map { card("c\($0)", 1) }
    try await broker.publish("big", cards)
    let subscription = try broker.subscribe("big")
    _ = try ready(subscription)  // its snapshot
    let pump = CountingPump()
    subscription.drain(with: pump)
    try await broker.publish("big", [card("c0", 2), card("c1", 2), card("c2", 2)])  // past the bound of 2
    var wakes = pump.wakes.withLock { $0 }
    var updates = try broker.readyUpdates(for: subscription, buildingOffTheCaller: true).map(readOffTheWire)
    #expect(updates.isEmpty)
    // Each wake, the commit's own included (it may come after the publish returns), pulls
    // again, until the task's snapshot is there. (Built in place, nothing would wake it.)
    while updates.isEmpty {
      wakes += 1
      await pump.signal.wait(until: wakes)
      updates = try broker.readyUpdates(for: subscription, buildingOffTheCaller: true).map(readOffTheWire)
    }
    #expect(updates.first?.isSnapshot == true && updates.first?.throughOffset == Int64(cards.count) + 3)
  }

  /// Only the first batch runs on the executor a commit started on: publishes that keep
  /// arriving (from other connections) are committed on the global executor, so that the
  /// event loop gets back to its sockets.
  @Test(.timeLimit(.minutes(1))) func batchesAfterTheFirstLeaveTheExecutorTheCommitStartedOn() async throws {
    let (broker, storage) = try await brokerHoldingCommits()
    let executor = QueuedTaskExecutor()
    let (answered, answers) = AsyncStream.makeStream(of: (String, Bool).self)
    func publish(_ cardID: String) {
      broker.publish(
        EncodedPublishRequest(encoding: PublishRequest(topic: "t", changes: [CardChange(upserting: card(cardID, 1))])), for: publisher,
        committingOn: executor,
        completion: Answered { _ in answers.yield((cardID, executor.isRunningTheCaller)) })
    }
    publish("a")
    executor.runQueuedJobs()
    #expect(storage.heldCount == 1)  // the first batch, held in its commit
    publish("b")
    publish("c")
    storage.release()
    executor.runQueuedJobs()
    var onTheExecutor: [String: Bool] = [:]
    for await (cardID, isOnTheExecutor) in answered.prefix(3) { onTheExecutor[cardID] = isOnTheExecutor }
    #expect(onTheExecutor == ["a": true, "b": false, "c": false])
    #expect(storage.commits.withLock { $0 } == 2)
  }

  @Test func watermarksConfirmFreshnessWhenNothingChanges() async throws {
    let broker = try await makeBroker { $0.watermarkInterval = .seconds(30) }
    try await broker.publish("t", [card("a", 1)])
    let subscription = try broker.subscribe("t")
    _ = try ready(subscription)
    clock.advance(by: .seconds(29))
    broker.tick()
    #expect(try ready(subscription).isEmpty)
    clock.advance(by: .seconds(1))
    broker.tick()
    let watermark = try ready(subscription)
    #expect(watermark.count == 1 && watermark[0].changes.isEmpty && watermark[0].throughOffset == 1)
    #expect(watermark[0].serverTimeMillis == clock.now)
  }

  /// An update says the client's copy is exact (`complete`) only when nothing of its topic
  /// is left to send — not while a catch-up or a backlog is taken a piece at a time — and a
  /// watermark always does.
  @Test func onlyTheUpdateThatLeavesNothingOfItsTopicQueuedIsComplete() async throws {
    let broker = try await makeBroker { $0.watermarkInterval = .seconds(30) }
    let epoch = try await broker.publish("t", [card("a", 1), card("b", 1), card("c", 1)]).epoch
    let subscription = try broker.subscribe("t", epoch: epoch, offset: 0)
    let pieces = try (0..<3).flatMap { _ in try ready(subscription, limit: 1) }
    #expect(pieces.map(\.throughOffset) == [1, 2, 3] && pieces.map(\.isComplete) == [false, false, true])
    clock.advance(by: .seconds(30))
    broker.tick()
    let watermark = try ready(subscription)
    #expect(watermark.count == 1 && watermark[0].changes.isEmpty && watermark[0].isComplete)
  }

  /// A quiet topic gets its watermark although the subscription's other topic keeps the
  /// stream busy; the busy topic, confirmed by its own updates, gets none.
  @Test func aQuietTopicGetsItsWatermarkWhileAnotherKeepsTheStreamBusy() async throws {
    let broker = try await makeBroker { $0.watermarkInterval = .seconds(30) }
    try await broker.publish("quiet", [card("a", 1)])
    try await broker.publish("busy", [card("b", 1)])
    let subscription = try broker.subscribe(SubscribeRequest(topics: [TopicPosition(topic: "quiet"), TopicPosition(topic: "busy")]), for: reader)
    #expect(try ready(subscription).map(\.topic) == ["quiet", "busy"])
    for second in 1...30 {
      clock.advance(by: .seconds(1))
      try await broker.publish("busy", [card("b", second + 1)])
      broker.tick()
      let updates = try ready(subscription)
      #expect(updates.map(\.topic) == (second < 30 ? ["busy"] : ["busy", "quiet"]), "at \(second) s")
      guard second == 30, let watermark = updates.last else { continue }
      #expect(watermark.changes.isEmpty && watermark.throughOffset == 1 && watermark.serverTimeMillis == clock.now)
    }
  }

  /// A subscription whose token expired is ended, and logged, once: one whose connection
  /// takes no bytes stays registered until it closes, and must not log again every second.
  @Test func anExpiredTokenIsLoggedOnce() async throws {
    let records = RecordingLogHandler.Records()
    let broker = try await makeBroker { $0.logger = RecordingLogHandler.logger(into: records) }
    _ = try broker.subscribe(SubscribeRequest(topics: [TopicPosition(topic: "t")]), for: principal(.subscriber, expiresAtMillis: clock.now + 5000))
    clock.advance(by: .seconds(5))
    for _ in 0..<5 {
      broker.tick()
      clock.advance(by: .seconds(1))
    }
    #expect(records.all.filter { $0.message == "a subscription's token expired" }.count == 1)
  }

  /// A take writes each sent topic's last send into the subscription's table of topics in
  /// place: a subscription to 1,000 topics does not copy the table per delivery.
  @Test func aTakeDoesNotCopyTheTableOfTopics() async throws {
    let broker = try await makeBroker()
    let topics = (0..<1000).map { "driver/\($0)/earnings" }
    let subscription = try broker.subscribe(SubscribeRequest(topics: topics.map { TopicPosition(topic: $0) }), for: reader)
    while let updates = try subscription.takeReady(maxChanges: 512, nowMillis: clock.now), !updates.isEmpty {}
    try await broker.publish("driver/7/earnings", [card("a", 1)])
    let table = { subscription.state.withLock { unsafeBitCast($0.topics, to: UInt.self) } }
    let before = table()
    #expect(try subscription.takeReady(maxChanges: 512, nowMillis: clock.now)?.count == 1)
    #expect(table() == before)
  }

  /// A stream ends with UNAUTHENTICATED once its token expires: at the broker's tick, or —
  /// when an update is ready sooner — at the take, so nothing is delivered past the expiry.
  /// Either way the end is logged, once.
  @Test(arguments: [true, false]) func aStreamEndsWhenItsTokenExpires(ticked: Bool) async throws {
    let records = RecordingLogHandler.Records()
    let broker = try await makeBroker { $0.logger = RecordingLogHandler.logger(into: records) }
    let subscription = try broker.subscribe(
      SubscribeRequest(topics: [TopicPosition(topic: "t")]),
      for: principal(.subscriber, expiresAtMillis: clock.now + 5000))
    _ = try ready(subscription)
    clock.advance(by: .seconds(5))
    if ticked { broker.tick() } else { try await broker.publish("t", [card("a", 1)]) }
    await expectStatus(.unauthenticated) { try await broker.nextUpdates(for: subscription) }
    broker.tick()
    #expect(records.all.filter { $0.message == "a subscription's token expired" }.count == 1)
  }

  @Test func aStorageFailureFailsThePublishAndOffsetsAreNotReused() async throws {
    let storage = CountingStorage()
    let broker = try await Broker(storage: storage, configuration: BrokerConfiguration(nowMillis: clock.function))
    try await broker.publish("t", [card("a", 1)])
    storage.failing.withLock { $0 = true }
    await #expect(throws: RPCError.self) { try await broker.publish("t", [card("a", 2)]) }
    #expect(try broker.state.withLock { $0.topics["t"]!.records["a"]?.card }?.decoded() == card("a", 1))
    storage.failing.withLock { $0 = false }
    let after = try await broker.publish("t", [card("a", 3)])
    #expect(after.firstOffset == 3)
  }

  /// The tombstone prunes of a commit that failed go with the next publish's commit, to any
  /// topic: the floor of a topic that is not published to again still rises.
  @Test(.timeLimit(.minutes(1))) func prunesOfAFailedCommitGoWithTheNextPublish() async throws {
    let storage = CountingStorage()
    let broker = try await Broker(
      storage: storage, configuration: BrokerConfiguration(maxTombstonesPerTopic: 0, nowMillis: clock.function))
    let cards = (0..<17).map { card("c\($0)", 1) }
    try await broker.publish("t", cards)
    storage.holdCommits()
    let removal = broker.enqueuePublish("t", [], removing: cards.map(\.cardID))
    await storage.waitUntilHeld()
    // The removals commit; their prune, computed then, fails in the commit after.
    storage.failing.withLock { $0 = true }
    storage.release()
    await storage.waitUntilFailed(1)
    storage.failing.withLock { $0 = false }
    #expect(try await removal.value.lastOffset == 34)
    #expect(broker.state.withLock { $0.topics["t"]!.floorOffset } == 0)
    try await broker.publish("u", [card("a", 1)])
    #expect(broker.state.withLock { $0.topics["t"]!.floorOffset } == 34)
  }

  /// Through a storage outage the age prune is tried every minute, and fails every minute: a
  /// topic's failed prunes are merged — the union of their tombstones, the highest floor —
  /// not kept one per minute, and go with the first publish once storage is back.
  @Test(.timeLimit(.minutes(1))) func failedPrunesOfATopicAreMergedNotPiledUp() async throws {
    let storage = CountingStorage()
    let broker = try await Broker(
      storage: storage, configuration: BrokerConfiguration(maxTombstoneAge: .seconds(60), nowMillis: clock.function))
    try await broker.publish("t", [card("a", 1), card("b", 1), card("c", 1)])
    try await broker.publish("t", [], removing: ["a"])  // at 0 s
    clock.advance(by: .seconds(30))
    let removal = try await broker.publish("t", [], removing: ["b"])  // at 30 s
    storage.failing.withLock { $0 = true }
    for minute in 1...5 {
      clock.advance(by: .seconds(60))
      broker.tick()  // at 90 s a's prune; from 150 s on a's and b's
      await storage.waitUntilFailed(minute)
    }
    #expect(broker.intake.withLock { $0.failedPrunes.count } == 1)
    storage.failing.withLock { $0 = false }
    try await broker.publish("u", [card("x", 1)])
    #expect(broker.state.withLock { $0.topics["t"]!.floorOffset } == removal.lastOffset)
    #expect(broker.state.withLock { $0.topics["t"]!.records.keys.sorted() } == ["c"])
  }

  /// Two prunes of a topic merged prune every tombstone of either, a card's later removal
  /// when both name it, and set the higher floor.
  @Test func mergedPrunesDoWhatBothWould() {
    var prune = TombstonePrune(topic: "t", tombstones: [("a", 4), ("b", 6)], floorOffset: 6)
    prune.formUnion(TombstonePrune(topic: "t", tombstones: [("c", 2), ("a", 9)], floorOffset: 9))
    #expect(prune.tombstones.map(\.cardID) == ["c", "b", "a"] && prune.tombstones.map(\.offset) == [2, 6, 9])
    #expect(prune.floorOffset == 9)
  }

  @Test(arguments: [
    (PublishRequest(topic: "bad topic", changes: [CardChange(upserting: card("a", 1))]), StatusCode.invalidArgument),
    (PublishRequest(topic: "t", changes: []), .invalidArgument),
    (PublishRequest(topic: "t", changes: [CardChange(upserting: card("a", 1)), CardChange(removing: "a")]), .invalidArgument),
    (PublishRequest(topic: "t", changes: [{ var change = CardChange(upserting: card("a", 1)); change.cardID = "b"; return change }()]),
      .invalidArgument),
    // Two IDs that differ after a NUL byte would come back from SQLite as one card.
    (PublishRequest(topic: "t", changes: [CardChange(upserting: card("a\u{0}x", 1))]), .invalidArgument),
    (PublishRequest(topic: "t", changes: [CardChange(removing: "a\u{0}")]), .invalidArgument),
    (PublishRequest(topic: "t", changes: [CardChange(upserting: card("a", 1))], idempotencyKey: "k\u{0}1"), .invalidArgument),
    // Another normal form than NFC: "é" as "e" and a combining accent, "Å" as the angstrom sign.
    // Swift's strings would take each for its NFC twin, and the broker would merge two cards.
    (PublishRequest(topic: "t", changes: [CardChange(upserting: card("e\u{301}", 1))]), .invalidArgument),
    (PublishRequest(topic: "t", changes: [CardChange(removing: "\u{212B}")]), .invalidArgument),
    (PublishRequest(topic: "t", changes: [CardChange(upserting: card("a", 1))], idempotencyKey: "caf\u{65}\u{301}"), .invalidArgument),
    (PublishRequest(topic: "t", changes: [{ var change = CardChange(upserting: card("e\u{301}", 1)); change.cardID = "\u{E9}"; return change }()]),
      .invalidArgument),
    // Every later publish to the topic with an empty key would be answered as its replay.
    (PublishRequest(topic: "t", changes: [CardChange(upserting: card("a", 1))], idempotencyKey: ""), .invalidArgument),
    // Kept as keys: a few hundred bytes at most.
    (PublishRequest(topic: "t", changes: [CardChange(upserting: card(String(repeating: "c", count: 257), 1))]), .invalidArgument),
    (PublishRequest(topic: "t", changes: [CardChange(removing: String(repeating: "c", count: 257))]), .invalidArgument),
    (PublishRequest(topic: "t", changes: [CardChange(upserting: card("a", 1))], idempotencyKey: String(repeating: "k", count: 257)),
      .invalidArgument),
    (PublishRequest(topic: "t", changes: [CardChange(upserting: titled("a", bytes: Broker.maxCardSize))]), .invalidArgument),
    // A card built in this process without its required priority and isValid.
    (PublishRequest(topic: "t", changes: [{ var card = TrackerCard(); card.cardID = "a"; return CardChange(upserting: card) }()]),
      .invalidArgument),
  ])
  func badPublishesAreRefused(_ request: PublishRequest, code: StatusCode) async throws {
    let broker = try await makeBroker()
    await expectStatus(code) { try await broker.publish(request, for: publisher) }
    #expect(broker.intake.withLock { $0.publishes.pending.isEmpty })
    #expect(broker.state.withLock { $0.topics.values.allSatisfy { $0.topOffset == 0 } })
  }

  /// IDs in NFC are taken as their bytes spell them, whatever the script: "é" (C3 A9) and "Å"
  /// (C3 85) are cards of their own, and a key in NFC replays.
  @Test func idsInNormalizationFormCArePublished() async throws {
    let broker = try await makeBroker()
    let first = try await broker.publish("t", [card("\u{E9}", 1), card("\u{C5}", 1), card("\u{1E0D}\u{307}", 1)], key: "caf\u{E9}")
    #expect(first.lastOffset == 3)
    #expect(try await broker.publish("t", [card("\u{E9}", 1), card("\u{C5}", 1), card("\u{1E0D}\u{307}", 1)], key: "caf\u{E9}").replayed == true)
    try await broker.publish("t", [], removing: ["\u{E9}"])
    #expect(try broker.cards(in: "t", for: reader).changes.map(\.cardID) == ["\u{C5}", "\u{1E0D}\u{307}"])
  }

  /// Reads do not grow the broker: pulls and subscriptions of topics no one has published to
  /// keep nothing. A topic made anew keeps its epoch: a publish makes it in the epoch its
  /// readers were given, and a client that read it resumes without a snapshot.
  @Test func readsOfTopicsNoOneWritesLeaveNothingBehind() async throws {
    let broker = try await makeBroker()
    let epoch = try broker.cards(in: "empty/a", for: reader).epoch
    for index in 0..<100 { _ = try broker.cards(in: "empty/\(index)", for: reader) }
    let subscriptions = try ["empty/a"].map { try broker.subscribe($0) } + (0..<50).map { try broker.subscribe("empty/\($0)") }
    #expect(broker.state.withLock { $0.topics.isEmpty })
    #expect(try ready(subscriptions[0]).map(\.epoch) == [epoch])
    #expect(try await broker.publish("empty/a", [card("a", 1)]).epoch == epoch)
    #expect(try ready(subscriptions[0]).flatMap(\.changes).map(\.card) == [card("a", 1)])
    for subscription in subscriptions { broker.unsubscribe(subscription) }
    #expect(broker.state.withLock { Set($0.topics.keys) } == ["empty/a"])
    let other = try broker.cards(in: "empty/b", for: reader).epoch
    let resumed = try ready(try broker.subscribe("empty/b", epoch: other, offset: 0))
    #expect(resumed.count == 1 && !resumed[0].isSnapshot && resumed[0].epoch == other)
  }

  /// A subject holds at most so many subscriptions at once (each holds a queue); ending one
  /// makes room, and other subjects are not counted against it.
  @Test func aSubjectHoldsAtMostItsSubscriptions() async throws {
    let broker = try await makeBroker { $0.maxSubscriptionsPerSubject = 2 }
    let request = SubscribeRequest(topics: [TopicPosition(topic: "t")])
    let first = try broker.subscribe(request, for: reader)
    _ = try broker.subscribe(request, for: reader)
    #expect(throws: RPCError(code: .resourceExhausted, message: "subject \"test\" already holds 2 subscriptions")) {
      try broker.subscribe(request, for: reader)
    }
    _ = try broker.subscribe(request, for: Principal(subject: "other", role: .subscriber, topics: ["*"], expiresAtMillis: .max))
    broker.unsubscribe(first)
    _ = try broker.subscribe(request, for: reader)
  }

  /// The size limits take what they name: keys of 256 bytes, and cards of 64 KiB.
  @Test func keysAndCardsAtTheirLimitsAreTaken() async throws {
    let broker = try await makeBroker()
    let key = String(repeating: "k", count: Broker.maxKeySize)
    var large = titled(String(repeating: "c", count: Broker.maxKeySize), bytes: Broker.maxCardSize)
    while EncodedCard(large).encodedSize() > Broker.maxCardSize {
      large.payload?.trackerDailyEarningsCard?.title.removeLast()
    }
    #expect(EncodedCard(large).encodedSize() == Broker.maxCardSize)
    let response = try await broker.publish(
      PublishRequest(topic: "t", changes: [CardChange(upserting: large)], idempotencyKey: key), for: publisher)
    #expect(response.firstOffset == 1)
  }

  @Test func aCardIsForwardedAsItsPublisherEncodedIt() async throws {
    // Not canonical: isValid before priority, the card ID last, a padded varint and an
    // unknown field in between. Subscribers and GetCards get these very bytes.
    let card: [UInt8] =
      [0x18, 0x81, 0x00] + [0x11] + withUnsafeBytes(of: Double(2).bitPattern.littleEndian, Array.init)
      + [0xF8, 0x01, 0x07] + [0x0A, 0x01, 0x61]
    let change: [UInt8] = [0x0A, 0x01, 0x61, 0x12, UInt8(card.count)] + card
    let request = try EncodedPublishRequest(serializedBytes: [0x0A, 0x01, 0x74, 0x12, UInt8(change.count)] + change)
    let broker = try await makeBroker()
    let subscription = try broker.subscribe("t")
    _ = try await broker.publish(request, for: publisher)
    #expect(try broker.cards(in: "t", for: reader).changes.map { $0.card?.bytes } == [card])
    let delivered = try subscription.takeReadyFromTheWire(maxChanges: 16, nowMillis: clock.now) ?? []
    #expect(delivered.flatMap(\.changes).compactMap { $0.card?.bytes }.last == card)
    var expected = TrackerCard(cardID: "a", priority: 2, isValid: true)
    expected.unknownFields = UnknownFields(bytes: [0xF8, 0x01, 0x07])
    #expect(try delivered.last?.changes.last?.card?.decoded() == expected)
  }

  @Test func rolesAndTopicClaimsAreEnforced() async throws {
    let broker = try await makeBroker()
    let request = PublishRequest(topic: "driver/1", changes: [CardChange(upserting: card("a", 1))])
    await expectStatus(.permissionDenied) { try await broker.publish(request, for: reader) }
    await expectStatus(.permissionDenied) { try await broker.publish(request, for: principal(.publisher, ["driver/2"])) }
    _ = try await broker.publish(request, for: principal(.publisher, ["driver/*"]))
    #expect(throws: RPCError.self) { try broker.cards(in: "driver/1", for: publisher) }
    #expect(throws: RPCError.self) {
      try broker.subscribe(SubscribeRequest(topics: [TopicPosition(topic: "driver/2")]), for: principal(.subscriber, ["driver/1"]))
    }
    #expect(try broker.cards(in: "driver/1", for: principal(.admin, ["driver/1"])).changes.count == 1)
  }

  @Test func aShutdownEndsStreamsWithSpreadRetryHintsAndRefusesNewOnes() async throws {
    let broker = try await makeBroker { $0.reconnectSpread = .seconds(5) }
    let subscriptions = try (0..<20).map { _ in try broker.subscribe("t") }
    broker.shutDown()
    var hints: Set<UInt32> = []
    for subscription in subscriptions {
      do {
        _ = try await broker.nextUpdates(for: subscription)
        _ = try await broker.nextUpdates(for: subscription)
        Issue.record("the stream did not end")
      } catch let error as RPCError {
        #expect(error.code == .unavailable)
        hints.insert(try #require(error.retryAfterMillis))
      }
    }
    #expect(hints.allSatisfy { $0 <= 5000 } && hints.count > 1)
    #expect(throws: RPCError.self) { try broker.subscribe("t") }
  }

  @Test func aSubscribeStormIsAdmittedAtTheConfiguredRate() async throws {
    let broker = try await makeBroker { $0.maxSubscribesPerSecond = 3 }
    for _ in 0..<3 { _ = try broker.subscribe("t") }
    do {
      _ = try broker.subscribe("t")
      Issue.record("the fourth subscribe in the same instant was admitted")
    } catch let error as RPCError {
      #expect(error.code == .unavailable)
      #expect((334...667).contains(error.retryAfterMillis ?? 0))  // a third of a second, plus up to as much jitter
    }
    clock.advance(by: .milliseconds(334))
    _ = try broker.subscribe("t")
  }

  /// A subscribe refused for another reason (its subject holds its subscriptions already, the
  /// broker is shutting down) spends none of the admission rate: the next one is admitted.
  @Test func aSubscribeRefusedForAnotherReasonSpendsNoAdmission() async throws {
    let broker = try await makeBroker {
      $0.maxSubscribesPerSecond = 2
      $0.maxSubscriptionsPerSubject = 1
    }
    let request = SubscribeRequest(topics: [TopicPosition(topic: "t")])
    _ = try broker.subscribe(request, for: reader)
    await expectStatus(.resourceExhausted) { try broker.subscribe(request, for: reader) }
    _ = try broker.subscribe(request, for: Principal(subject: "other", role: .subscriber, topics: ["*"], expiresAtMillis: .max))
    clock.advance(by: .seconds(1))  // two tokens again
    broker.shutDown()
    for _ in 0..<2 { await expectStatus(.unavailable) { try broker.subscribe(request, for: reader) } }
    try broker.admission.admit(nowMillis: clock.now)  // both tokens are there
  }
}

/// A publish's waiter that hands the answer to a closure.
struct Answered: PublishCompletion {
  let body: @Sendable (Result<PublishResponse, RPCError>) -> Void

  init(_ body: @escaping @Sendable (Result<PublishResponse, RPCError>) -> Void) {
    self.body = body
  }

  func complete(with result: Result<PublishResponse, RPCError>) {
    body(result)
  }
}
