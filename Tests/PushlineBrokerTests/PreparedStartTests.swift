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

  @Test func aStartIsCurrentUntilTheTopicChanges() {
    var topic = Self.topic()
    let start = PreparedStart(topic, from: nil, nowMillis: 0)
    #expect(start.isCurrent(for: topic))
    topic.apply([CardRecord(cardID: "c1", offset: 5, card: nil, changedAtMillis: 0)])
    #expect(!start.isCurrent(for: topic))
    let afterRemoval = PreparedStart(topic, from: nil, nowMillis: 0)
    topic.apply(TombstonePrune(topic: "t", tombstones: [("c1", 5)], floorOffset: 5))
    #expect(!afterRemoval.isCurrent(for: topic))
  }
}
