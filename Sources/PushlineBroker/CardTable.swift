/// A topic's cards and tombstones by cardID — the card table. Once it holds many, it is split
/// into shards, so that a change made while a copy of the table is held (a subscription's
/// start or a GetCards being built from it, outside the broker's lock) copies one shard under
/// the lock rather than the whole table: a 256th of a topic of 100,000 cards.
public struct CardTable: Sendable {
  /// The records, by cardID: one dictionary until the table passes ``shardingCount``.
  private var shards: [[String: CardRecord]]
  /// How many records the table holds.
  public private(set) var count = 0

  /// Tables past this many records are split into ``shardCount`` shards (and stay split).
  static let shardingCount = 4096
  /// How many shards a table split holds.
  static let shardCount = 256

  /// A table of `records`, each card at its latest version (the highest offset).
  init(_ records: [CardRecord]) {
    shards = [[:]]
    for record in records where self[record.cardID].map({ $0.offset < record.offset }) ?? true {
      updateValue(record, forKey: record.cardID)
    }
  }

  /// The shard that holds `cardID`.
  private func shard(of cardID: String) -> Int {
    shards.count == 1 ? 0 : Int(UInt(bitPattern: cardID.hashValue) % UInt(shards.count))
  }

  /// The record of `cardID`, if the table holds one.
  public subscript(cardID: String) -> CardRecord? {
    shards[shard(of: cardID)][cardID]
  }

  /// Every record, in no particular order.
  public var values: some Sequence<CardRecord> { shards.lazy.flatMap(\.values) }

  /// Every cardID, in no particular order.
  public var keys: some Sequence<String> { shards.lazy.flatMap(\.keys) }

  /// Stores `record` for `cardID`; returns the record it replaced, if any.
  @discardableResult
  mutating func updateValue(_ record: CardRecord, forKey cardID: String) -> CardRecord? {
    let previous = shards[shard(of: cardID)].updateValue(record, forKey: cardID)
    if previous == nil {
      count += 1
      if shards.count == 1, count > Self.shardingCount { split() }
    }
    return previous
  }

  /// Removes the record of `cardID`; returns it, if the table held one.
  @discardableResult
  mutating func removeValue(forKey cardID: String) -> CardRecord? {
    let removed = shards[shard(of: cardID)].removeValue(forKey: cardID)
    if removed != nil { count -= 1 }
    return removed
  }

  /// Splits the one dictionary into ``shardCount`` shards.
  private mutating func split() {
    let all = shards[0]
    shards = Array(repeating: [:], count: Self.shardCount)
    for (cardID, record) in all { shards[shard(of: cardID)][cardID] = record }
  }
}
