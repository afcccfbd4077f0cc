public import PushlineSchema

/// One topic as the broker keeps it: the epoch, the top offset, the tombstone floor and the
/// cards keyed by cardID, each with the offset of its last change. The card table is the
/// log: a resume from any offset at or above the floor is served from it, compacted.
public struct TopicState: Sendable {
  public var name: String
  /// Changes when the topic's history is lost (a new topic, an in-memory broker restarted):
  /// positions from another epoch mean nothing.
  public var epoch: Int64
  /// The offset of the topic's last committed change; 0 before the first.
  public var topOffset: Int64
  /// The lowest position a resume is served from: every removal after it still has its
  /// tombstone.
  public var floorOffset: Int64
  /// Live cards and tombstones, by cardID.
  public private(set) var records: CardTable
  /// How many of `records` are tombstones.
  public private(set) var tombstoneCount: Int
  /// No tombstone changed before this: a lower bound, made exact by a scan that finds none to
  /// prune for age, so that a topic with young tombstones is not scanned at every commit.
  private var oldestTombstoneBound: Int64
  /// The changes after ``recentSince``, in offset order, each as its offset and card — kept
  /// only by topics of many cards, so that the changes since a recent offset are found
  /// without a scan of the whole table (``changes(after:)``), which runs under the broker's
  /// lock when a subscription's start was prepared while the topic moved.
  ///
  /// In chunks of ``recentChunkSize``: a subscribe or a GetCards builds from a copy of the
  /// topic outside the lock, and a commit meanwhile then copies the last chunk, as it copies
  /// one shard of the card table — not tens of thousands of changes, under the lock.
  private var recent: [[RecentChange]] = []
  /// How many changes `recent` holds.
  private var recentCount = 0
  /// Every change after this offset is in `recent`.
  private var recentSince: Int64

  /// One of ``recent``'s changes.
  private typealias RecentChange = (offset: Int64, cardID: String)

  /// Topics with fewer cards than this keep no `recent` changes: their table is short to scan.
  static let minCardsForRecentChanges = 1024
  /// The changes in each of ``recent``'s chunks but the last.
  static let recentChunkSize = 256

  /// A random epoch other than `old`, for a topic whose history was lost: positive and within
  /// 53 bits, as every epoch, so that clients keeping numbers as doubles keep it exactly.
  static func epoch(renewing old: Int64) -> Int64 {
    var epoch: Int64
    repeat { epoch = Int64.random(in: 1...(1 << 53)) } while epoch == old
    return epoch
  }

  /// A topic with no changes yet.
  public init(name: String, epoch: Int64) {
    self.init(name: name, epoch: epoch, topOffset: 0, floorOffset: 0, records: [])
  }

  /// A topic as storage kept it.
  public init(name: String, epoch: Int64, topOffset: Int64, floorOffset: Int64, records: [CardRecord]) {
    self.name = name
    self.epoch = epoch
    self.topOffset = topOffset
    self.floorOffset = floorOffset
    self.records = CardTable(records)
    tombstoneCount = records.count { $0.isTombstone }
    oldestTombstoneBound = records.lazy.filter(\.isTombstone).map(\.changedAtMillis).min() ?? .max
    recentSince = topOffset
  }

  /// Applies committed changes, whose offsets are above ``topOffset`` and increasing.
  public mutating func apply(_ changes: [CardRecord]) {
    for record in changes {
      if let previous = records.updateValue(record, forKey: record.cardID), previous.isTombstone { tombstoneCount -= 1 }
      if record.isTombstone {
        tombstoneCount += 1
        oldestTombstoneBound = min(oldestTombstoneBound, record.changedAtMillis)
      }
      topOffset = max(topOffset, record.offset)
    }
    noteRecent(changes)
  }

  /// Keeps `changes`, just applied, among the recent ones — the last quarter to half of the
  /// table's size in changes, give or take a chunk — or, for a topic of few cards, none.
  private mutating func noteRecent(_ changes: [CardRecord]) {
    let kept = records.count / 4
    guard kept >= Self.minCardsForRecentChanges / 4 else {
      if !recent.isEmpty { (recent, recentCount) = ([], 0) }
      recentSince = topOffset
      return
    }
    for change in changes {
      if recent.last.map({ $0.count >= Self.recentChunkSize }) ?? true {
        recent.append([])
        recent[recent.count - 1].reserveCapacity(Self.recentChunkSize)
      }
      recent[recent.count - 1].append((change.offset, change.cardID))
    }
    recentCount += changes.count
    guard recentCount > 2 * kept else { return }
    while let oldest = recent.first, recentCount - oldest.count >= kept, let last = oldest.last {
      recentSince = last.offset
      recentCount -= oldest.count
      recent.removeFirst()
    }
  }

  /// Whether a client at `epoch` and `offset` can be brought up to date from the card table;
  /// otherwise it needs a snapshot.
  public func canResume(epoch: Int64?, offset: Int64?) -> Bool {
    guard let epoch, let offset else { return false }
    return epoch == self.epoch && offset >= floorOffset && offset <= topOffset
  }

  /// Every card and tombstone changed after `offset`, at its latest version, in offset order.
  public func changes(after offset: Int64) -> [CardRecord] {
    guard offset >= recentSince else {
      return records.values.filter { $0.offset > offset }.sorted { $0.offset < $1.offset }
    }
    // The recent changes after `offset`, each kept if it is still its card's latest: the
    // chunks that start after it whole, behind the end of the one it falls in.
    func latest(_ change: RecentChange) -> CardRecord? {
      records[change.cardID].flatMap { $0.offset == change.offset ? $0 : nil }
    }
    var firstChunk = recent.endIndex
    while firstChunk > recent.startIndex, let head = recent[firstChunk - 1].first, head.offset > offset { firstChunk -= 1 }
    var changes: [CardRecord] = []
    if firstChunk > recent.startIndex {
      let chunk = recent[firstChunk - 1]
      var first = chunk.endIndex
      while first > chunk.startIndex, chunk[first - 1].offset > offset { first -= 1 }
      changes = chunk[first...].compactMap(latest)
    }
    for chunk in recent[firstChunk...] { changes += chunk.compactMap(latest) }
    return changes
  }

  /// The live cards not expired at `nowSeconds`, in offset order: what a snapshot carries.
  /// Expired cards are dropped here, lazily — the broker never pushes an expiry.
  public func liveCards(nowSeconds: Int64) -> [CardRecord] {
    records.values.filter { record in
      guard let card = record.card else { return false }
      return card.expiresAt.map { $0 > nowSeconds } ?? true
    }.sorted { $0.offset < $1.offset }
  }

  /// The topic's snapshot at `nowMillis`, positioned at the top offset.
  public func snapshot(nowMillis: Int64) -> EncodedTopicUpdate {
    var update = EncodedTopicUpdate(topic: name, epoch: epoch, throughOffset: topOffset)
    update.snapshot = true
    update.changes = liveCards(nowSeconds: nowMillis / 1000).map(\.change)
    update.serverTimeMillis = nowMillis
    return update
  }

  /// The tombstones to drop so that at most `limit` remain and none is older than `maxAgeMillis`,
  /// and the floor that dropping them sets; `nil` when there is nothing to drop. Oldest first.
  /// Nothing is dropped until the count passes the limit by an eighth (at least 16), so that
  /// prunes come in batches rather than one per removal. A negative limit counts as 0; a limit
  /// or an age too large to add to counts or subtract from times prunes nothing by it.
  public mutating func tombstonesToPrune(limit: Int, maxAgeMillis: Int64, nowMillis: Int64) -> TombstonePrune? {
    guard tombstoneCount > 0 else { return nil }  // the common case: no scan at all
    let limit = max(limit, 0)
    let (slack, slackOverflows) = limit.addingReportingOverflow(max(16, limit / 8))
    let (oldest, oldestOverflows) = nowMillis.subtractingReportingOverflow(maxAgeMillis)
    let oldestAllowed = oldestOverflows ? (maxAgeMillis > 0 ? .min : .max) : oldest
    guard (!slackOverflows && tombstoneCount > slack) || hasTombstone(olderThan: oldestAllowed) else { return nil }
    let tombstones = records.values.filter(\.isTombstone).sorted { $0.offset < $1.offset }
    let excess = tombstones.count - limit
    let pruned = tombstones.enumerated().filter { index, record in index < excess || record.changedAtMillis < oldestAllowed }
      .map(\.element)
    guard let last = pruned.last else { return nil }
    return TombstonePrune(topic: name, tombstones: pruned.map { ($0.cardID, $0.offset) }, floorOffset: max(floorOffset, last.offset))
  }

  /// Whether a tombstone changed before `millis`: no scan while the bound says none can be;
  /// a scan that finds none makes the bound exact.
  private mutating func hasTombstone(olderThan millis: Int64) -> Bool {
    guard oldestTombstoneBound < millis else { return false }
    let oldest = records.values.lazy.filter(\.isTombstone).map(\.changedAtMillis).min() ?? .max
    oldestTombstoneBound = oldest
    return oldest < millis
  }

  /// Drops the tombstones of `prune` that are still the cards' latest change, and raises the floor.
  public mutating func apply(_ prune: TombstonePrune) {
    for (cardID, offset) in prune.tombstones where records[cardID]?.offset == offset && records[cardID]?.isTombstone == true {
      records.removeValue(forKey: cardID)
      tombstoneCount -= 1
    }
    floorOffset = max(floorOffset, prune.floorOffset)
  }
}

/// Tombstones dropped from a topic and the floor that results: a resume from below the floor
/// gets a snapshot, since a removal it would need is gone.
public struct TombstonePrune: Sendable {
  public var topic: String
  /// (cardID, offset of the removal) — a card changed again since keeps its new record.
  public var tombstones: [(cardID: String, offset: Int64)]
  public var floorOffset: Int64

  /// Adds `other`'s tombstones (of the same topic) and takes the higher floor: one prune that
  /// does what both would. A card in both keeps its later removal (the earlier one is no longer
  /// the card's latest change, and pruning it would do nothing).
  mutating func formUnion(_ other: TombstonePrune) {
    var offsets = Dictionary(tombstones.map { ($0.cardID, $0.offset) }, uniquingKeysWith: max)
    for (cardID, offset) in other.tombstones { offsets[cardID] = max(offsets[cardID] ?? offset, offset) }
    tombstones = offsets.map { (cardID: $0.key, offset: $0.value) }.sorted { $0.offset < $1.offset }
    floorOffset = max(floorOffset, other.floorOffset)
  }
}
