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
  /// before, as the topic grows past the size that keeps recent changes and shrinks below it;
  /// and a copy taken on the way (as a subscribe builds from one) still answers as it did.
  @Test(arguments: 0..<8)
  func theChangesAfterAnOffsetAreTheLatestVersionsSinceInOrder(seed: UInt64) {
    var random = SplitMix64(seed: seed)
    var topic = TopicState(name: "t", epoch: 1)
    var copy: (topic: TopicState, answers: [(after: Int64, offsets: [Int64])])?
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
      if step == 20 {
        copy = (topic, stride(from: topic.floorOffset, through: topic.topOffset, by: 97).map { ($0, topic.changes(after: $0).map(\.offset)) })
      }
    }
    for (after, offsets) in copy?.answers ?? [] { #expect(copy?.topic.changes(after: after).map(\.offset) == offsets) }
  }
}

/// The card table, whole or split into shards, as a dictionary of cardIDs.
@Suite("Card table")
struct CardTableTests {
  /// Upserts and removals across the size at which the table splits, and a copy taken on the
  /// way that later changes leave as it was: the table always holds what a dictionary would.
  @Test(arguments: 0..<4)
  func theTableHoldsWhatADictionaryWould(seed: UInt64) {
    var random = SplitMix64(seed: seed)
    var table = CardTable([])
    var model: [String: CardRecord] = [:]
    var copy: (table: CardTable, model: [String: CardRecord])?
    for offset in 1...Int64(CardTable.shardingCount * 3) {
      let cardID = "c\(random.next() % UInt64(CardTable.shardingCount * 2))"
      if random.next() % 5 == 0 {
        #expect(table.removeValue(forKey: cardID)?.offset == model.removeValue(forKey: cardID)?.offset)
      } else {
        let record = CardRecord(cardID: cardID, offset: offset, card: nil, changedAtMillis: offset)
        #expect(table.updateValue(record, forKey: cardID)?.offset == model.updateValue(record, forKey: cardID)?.offset)
      }
      if offset == Int64(CardTable.shardingCount) { copy = (table, model) }
    }
    for (table, model) in [(table, model), copy!] {
      #expect(table.count == model.count)
      #expect(Dictionary(uniqueKeysWithValues: table.values.map { ($0.cardID, $0.offset) }) == model.mapValues(\.offset))
      #expect(Set(table.keys) == Set(model.keys))
      #expect(model.keys.allSatisfy { table[$0]?.offset == model[$0]?.offset })
    }
  }

  /// A table made from records keeps each card's latest version, whatever their order.
  @Test func aTableFromRecordsKeepsEachCardsLatest() {
    let records = [("a", 3), ("b", 1), ("a", 1), ("a", 2)].map { CardRecord(cardID: $0.0, offset: Int64($0.1), card: nil, changedAtMillis: 0) }
    let table = CardTable(records)
    #expect(table.count == 2 && table["a"]?.offset == 3 && table["b"]?.offset == 1)
  }
}
