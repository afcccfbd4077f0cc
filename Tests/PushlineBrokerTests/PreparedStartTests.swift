@testable import PushlineBroker
import PushlineSchema
import Testing

/// A subscription's start built outside the broker's lock: a catch-up when the client can
/// resume and it is short enough, else a snapshot; and good only while the topic is unchanged.
@Suite("Starts prepared outside the lock")
struct PreparedStartTests {
  static func topic() -> TopicState {
    var topic = TopicState(name: "t", epoch: 7)
    topic.apply((1...4).map { CardRecord(cardID: "c\($0)", offset: Int64($0), card: EncodedCard(card("c\($0)", 1)), changedAtMillis: 0) })
    return topic
  }

  @Test func aResumeIsACatchUpUnlessTooLong() {
    let topic = Self.topic()
    let resume = PreparedStart(topic, from: TopicPosition(topic: "t", epoch: 7, offset: 2), catchUpsUpTo: 2, nowMillis: 0)
    #expect(resume.catchUp?.map(\.cardID) == ["c3", "c4"] && resume.snapshot == nil)
    let long = PreparedStart(topic, from: TopicPosition(topic: "t", epoch: 7, offset: 1), catchUpsUpTo: 2, nowMillis: 0)
    #expect(long.catchUp == nil && long.snapshot?.changes.count == 4)
    let fresh = PreparedStart(topic, from: nil, nowMillis: 0)
    #expect(fresh.catchUp == nil && fresh.snapshot?.throughOffset == 4)
  }

  /// A start stays good with the changes made since: none while nothing changed, the changes
  /// after its offset once something did; no good once removals after it are pruned, or in
  /// another epoch.
  @Test func aStartIsGoodLaterWithTheChangesSince() {
    var topic = Self.topic()
    let start = PreparedStart(topic, from: nil, nowMillis: 0)
    #expect(start.delta(in: topic)?.isEmpty == true)
    topic.apply([CardRecord(cardID: "c1", offset: 5, card: nil, changedAtMillis: 0)])
    #expect(start.delta(in: topic)?.map(\.offset) == [5])
    topic.apply(TombstonePrune(topic: "t", tombstones: [("c1", 5)], floorOffset: 5))
    #expect(start.delta(in: topic) == nil)
    #expect(PreparedStart(topic, from: nil, nowMillis: 0).delta(in: TopicState(name: "t", epoch: 8)) == nil)
  }

  /// A start taken with the changes made since reaches the client as the start, then those
  /// changes: a snapshot at the start's offset, then an update complete at the topic's top.
  @Test func aSubscriptionStartsWithThePreparedStartThenTheChangesSince() throws {
    var topic = Self.topic()
    let start = PreparedStart(topic, from: nil, nowMillis: 0)
    topic.apply([CardRecord(cardID: "c1", offset: 5, card: nil, changedAtMillis: 0)])
    let delta = try #require(start.delta(in: topic))
    let subscription = Subscription(principal: reader, maxQueuedChanges: 100, maxMessageSize: 1 << 20, nowMillis: 0)
    subscription.attach(topic, through: start.topOffset, catchUp: nil, snapshot: start.snapshot, then: delta)
    let updates = try #require(try subscription.takeReadyFromTheWire(maxChanges: 10, nowMillis: 0))
    #expect(updates.map(\.isSnapshot) == [true, false])
    #expect(updates.map(\.throughOffset) == [4, 5] && updates[1].complete == true)
    #expect(updates[1].changes.map(\.cardID) == ["c1"] && updates[1].changes[0].card == nil)
  }

  /// An overflowed topic's new snapshot, prepared while commits went on, reaches the client
  /// as the snapshot at the offset it was prepared at, then the changes since, complete at
  /// the topic's top: none of the versions the overflow dropped, nothing lost.
  @Test func anOverflowsSnapshotPreparedMeanwhileIsFollowedByTheChangesSince() throws {
    var topic = Self.topic()
    let subscription = Subscription(principal: reader, maxQueuedChanges: 2, maxMessageSize: 1 << 20, nowMillis: 0)
    subscription.attach(topic, through: topic.topOffset, catchUp: [], snapshot: nil, then: [])
    let overflowing = (5...7).map { CardRecord(cardID: "c\($0)", offset: Int64($0), card: EncodedCard(card("c\($0)", 1)), changedAtMillis: 0) }
    topic.apply(overflowing)
    _ = subscription.enqueue(EncodedChangeRun(overflowing.map(\.change)), topic: "t")
    #expect(subscription.topicsNeedingSnapshot == ["t"])
    let start = PreparedStart(topic, from: nil, nowMillis: 0)
    topic.apply([CardRecord(cardID: "c2", offset: 8, card: nil, changedAtMillis: 0)])
    let delta = try #require(start.delta(in: topic))
    subscription.resynchronize(topic, snapshot: try #require(start.snapshot), through: start.topOffset, then: delta)
    let updates = try #require(try subscription.takeReadyFromTheWire(maxChanges: 10, nowMillis: 0))
    #expect(updates.map(\.isSnapshot) == [true, false] && updates.map(\.throughOffset) == [7, 8])
    #expect(updates[0].changes.map(\.cardID).sorted() == ["c1", "c2", "c3", "c4", "c5", "c6", "c7"])
    #expect(updates[1].changes.map(\.cardID) == ["c2"] && updates[1].changes[0].card == nil && updates[1].complete == true)
    #expect(subscription.topicsNeedingSnapshot.isEmpty)
  }
}
