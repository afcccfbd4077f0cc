@testable import PushlineBroker
import PushlineSchema
import PushlineTesting
import Testing

/// A topic's card table as the log it stands for.
@Suite("Topic state")
struct TopicStateTests {
  /// The changes after an offset — found from the recent changes a topic of many cards
  /// keeps, or by a scan of its table — are every card and tombstone changed after it, at
  /// its latest version, in offset order, whatever mix of upserts, removals and prunes came
  /// before, as the topic grows past the size that keeps recent changes and shrinks below it.
  @Test(arguments: 0..<8)
  func theChangesAfterAnOffsetAreTheLatestVersionsSinceInOrder(seed: UInt64) {
    var random = SplitMix64(seed: seed)
    var topic = TopicState(name: "t", epoch: 1)
    let cardCount = TopicState.minCardsForRecentChanges * 2
    var offset: Int64 = 0
    for step in 0..<60 {
      // Grows for the first half, then mostly removes and prunes, so it shrinks again.
      let removals = step < 30 ? 0.1 : 0.8
      let batch = (0..<Int.random(in: 1...200, using: &random)).map { _ in Int.random(in: 0..<cardCount, using: &random) }
      let changes = Set(batch).sorted().map { index -> CardRecord in
        offset += 1
        let id = "card-\(index)"
        let card = Double.random(in: 0..<1, using: &random) < removals ? nil : EncodedCard(card(id, Int(offset)))
        return CardRecord(cardID: id, offset: offset, card: card, changedAtMillis: offset)
      }
      topic.apply(changes)
      if step % 7 == 6, let prune = topic.tombstonesToPrune(limit: 50, maxAgeMillis: .max, nowMillis: offset) { topic.apply(prune) }
      for _ in 0..<5 {
        let after = Int64.random(in: topic.floorOffset...topic.topOffset, using: &random)
        let expected = topic.records.values.filter { $0.offset > after }.sorted { $0.offset < $1.offset }
        #expect(topic.changes(after: after).map(\.offset) == expected.map(\.offset))
      }
    }
  }
}
