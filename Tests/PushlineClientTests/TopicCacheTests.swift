import Foundation
import GRDB
import PushlineClient
import PushlineSchema
import PushlineWire
import Testing

@Suite("Card cache: the delivery contract's client side, and persistence")
struct TopicCacheTests {
  @Test func changesAtOrBelowThePositionAreIgnoredAndSkipsAreNotLosses() {
    var topic = TopicCache(topic: "t")
    _ = topic.apply(update("t", from: 1, [card("a", priority: 1), card("b", priority: 1)], snapshot: true), receivedAtMillis: 0)
    #expect(topic.position == 2)
    let outcome = topic.apply(update("t", from: 2, [card("b", priority: 2), card("c", priority: 1)]), receivedAtMillis: 0)
    #expect(outcome.upserted.map(\.card.cardID) == ["c"])  // offset 2 was already applied
    var skipping = update("t", from: 10, [card("a", priority: 3)])
    skipping.throughOffset = 12
    _ = topic.apply(skipping, receivedAtMillis: 0)
    #expect(topic.position == 12 && topic.cards["a"]?.card.priority == 3)
  }

  /// A broker that sends a card's versions out of order (a contract it breaks) cannot make an
  /// older version replace a newer one: d at 8 then 7 in one update, or c at 10 in an update
  /// positioned at 5 and then at 7, leave the newer.
  @Test func anOlderVersionDoesNotReplaceANewerOne() {
    var topic = TopicCache(topic: "t")
    _ = topic.apply(update("t", from: 1, [card("a", priority: 1)], snapshot: true), receivedAtMillis: 0)
    var backwards = update("t", from: 2, [])
    backwards.changes = [CardChange(upserting: card("d", priority: 8), offset: 8), CardChange(upserting: card("d", priority: 7), offset: 7)]
    backwards.throughOffset = 8
    _ = topic.apply(backwards, receivedAtMillis: 0)
    #expect(topic.cards["d"]?.offset == 8 && topic.cards["d"]?.card.priority == 8)
    var ahead = update("t", from: 10, [card("c", priority: 10)])
    ahead.throughOffset = 5  // below its own change: the position does not move past 8
    _ = topic.apply(ahead, receivedAtMillis: 0)
    var older = update("t", from: 9, [card("c", priority: 9)])
    older.throughOffset = 9
    _ = topic.apply(older, receivedAtMillis: 0)
    #expect(topic.cards["c"]?.offset == 10 && topic.cards["c"]?.card.priority == 10)
  }

  /// "Verified at" is the latest verification's time, not the largest: one kept from a broken
  /// clock (the far future) gives way to the next complete update's.
  @Test func verifiedAtIsTheLatestVerificationsTime() {
    var topic = TopicCache(topic: "t", epoch: 7, position: 1, verifiedAtMillis: .max)
    var watermark = update("t", from: 2, [])
    (watermark.serverTimeMillis, watermark.complete) = (1_800_000_000_000, true)
    _ = topic.apply(watermark, receivedAtMillis: 0)
    #expect(topic.verifiedAtMillis == 1_800_000_000_000)
  }

  /// An outcome is the update's net effect, each card's last change counting: a card brought
  /// and taken away is only removed, one taken away and brought back only upserted, and one
  /// brought twice upserted once, at its last version.
  @Test func anOutcomeIsTheUpdatesNetEffect() {
    var topic = TopicCache(topic: "t")
    _ = topic.apply(update("t", from: 1, [card("a", priority: 1)], snapshot: true), receivedAtMillis: 0)
    var changes = update("t", from: 2, [card("b", priority: 1)], removing: ["b", "a"])
    changes.changes += [CardChange(upserting: card("a", priority: 2), offset: 5), CardChange(upserting: card("c", priority: 1), offset: 6)]
    changes.changes.append(CardChange(upserting: card("c", priority: 2), offset: 7))
    changes.throughOffset = 7
    let outcome = topic.apply(changes, receivedAtMillis: 0)
    #expect(outcome.upserted.map(\.offset) == [5, 7] && outcome.removed == ["b"])
    #expect(topic.cards.mapValues(\.offset) == ["a": 5, "c": 7])
  }

  /// "Verified at T" moves only when the copy is then exactly the topic's state: a piece of a
  /// catch-up after hours away does not make the cards it leaves out look fresh.
  @Test func onlyExactCopiesAreVerifiedAtTheUpdatesTime() {
    var topic = TopicCache(topic: "t")
    var snapshot = update("t", from: 1, [card("a", priority: 1), card("b", priority: 1)], snapshot: true)
    snapshot.serverTimeMillis = 100
    _ = topic.apply(snapshot, receivedAtMillis: 0)
    #expect(topic.verifiedAtMillis == 100)
    var piece = update("t", from: 3, [card("a", priority: 2)])
    piece.serverTimeMillis = 7_200_000
    _ = topic.apply(piece, receivedAtMillis: 0)
    #expect(topic.verifiedAtMillis == 100)
    var last = update("t", from: 4, [card("b", priority: 2)])
    last.serverTimeMillis = 7_200_050
    last.complete = true
    _ = topic.apply(last, receivedAtMillis: 0)
    #expect(topic.verifiedAtMillis == 7_200_050)
  }

  @Test func anotherEpochIsIgnoredUntilItsSnapshotReplacesTheCards() {
    var topic = TopicCache(topic: "t")
    _ = topic.apply(update("t", from: 1, [card("a", priority: 1)], snapshot: true), receivedAtMillis: 0)
    _ = topic.apply(update("t", epoch: 8, from: 5, [card("x", priority: 1)]), receivedAtMillis: 0)
    #expect(Set(topic.cards.keys) == ["a"])
    let outcome = topic.apply(update("t", epoch: 8, from: 3, [card("y", priority: 1)], snapshot: true), receivedAtMillis: 0)
    #expect(Set(topic.cards.keys) == ["y"] && topic.epoch == 8 && topic.position == 3 && outcome.removed == ["a"])
  }

  /// A snapshot in parts keeps the cards held before it that its first part leaves out, so
  /// that none vanishes and comes back: a later part or change confirms them, and those still
  /// unconfirmed when the position reaches the whole snapshot's offset are its removals.
  @Test func aSnapshotInPartsKeepsTheCardsHeldUntilItsRestHasArrived() {
    var topic = TopicCache(topic: "t")
    _ = topic.apply(update("t", from: 1, [card("a", priority: 1), card("b", priority: 1), card("c", priority: 1)], snapshot: true), receivedAtMillis: 0)
    var firstPart = update("t", epoch: 8, from: 5, [card("b", priority: 2)], snapshot: true)
    firstPart.snapshotThroughOffset = 8
    let first = topic.apply(firstPart, receivedAtMillis: 0)
    #expect(first.removed.isEmpty && first.upserted.map(\.card.cardID) == ["b"] && first.replaced)
    #expect(Set(topic.cards.keys) == ["a", "b", "c"] && topic.awaitingSnapshot == ["a", "c"] && topic.position == 5)
    #expect(topic.cards["a"]?.card.priority == 1 && topic.cards["b"]?.card.priority == 2)

    let second = topic.apply(update("t", epoch: 8, from: 7, [card("c", priority: 3)]), receivedAtMillis: 0)
    #expect(second.removed.isEmpty && topic.awaitingSnapshot == ["a"] && topic.cards["c"]?.card.priority == 3)
    var last = update("t", epoch: 8, from: 8, [card("d", priority: 1)])
    last.complete = true
    let ended = topic.apply(last, receivedAtMillis: 0)
    #expect(ended.removed == ["a"] && Set(topic.cards.keys) == ["b", "c", "d"])
    #expect(topic.awaitingSnapshot.isEmpty && topic.snapshotThroughOffset == nil && topic.position == 8)
  }

  /// While a snapshot in parts arrives: a change at or below the position confirms nothing; a
  /// removal of an awaited card is reported once; the copy is not verified anew while cards
  /// await; a second snapshot in parts awaits every card it leaves out, the first's included;
  /// and an update without changes that reaches its offset ends it.
  @Test func aSnapshotInPartsAwaitsThroughRemovalsAndASecondOne() {
    var topic = TopicCache(topic: "t")
    var whole = update("t", from: 1, [card("a", priority: 1), card("b", priority: 1), card("c", priority: 1), card("d", priority: 1)], snapshot: true)
    whole.serverTimeMillis = 100
    _ = topic.apply(whole, receivedAtMillis: 0)
    var firstPart = update("t", epoch: 8, from: 5, [card("b", priority: 2)], snapshot: true)
    (firstPart.snapshotThroughOffset, firstPart.serverTimeMillis) = (20, 200)
    _ = topic.apply(firstPart, receivedAtMillis: 0)
    #expect(topic.awaitingSnapshot == ["a", "c", "d"] && topic.verifiedAtMillis == 100)

    var stale = update("t", epoch: 8, from: 4, [card("a", priority: 9)])
    stale.throughOffset = 5
    _ = topic.apply(stale, receivedAtMillis: 0)
    #expect(topic.awaitingSnapshot == ["a", "c", "d"] && topic.cards["a"]?.card.priority == 1)
    let removal = topic.apply(update("t", epoch: 8, from: 6, [], removing: ["c"]), receivedAtMillis: 0)
    #expect(removal.removed == ["c"] && topic.awaitingSnapshot == ["a", "d"])

    var secondPart = update("t", epoch: 9, from: 3, [card("a", priority: 3)], snapshot: true)
    secondPart.snapshotThroughOffset = 7
    _ = topic.apply(secondPart, receivedAtMillis: 0)
    #expect(topic.awaitingSnapshot == ["b", "d"] && Set(topic.cards.keys) == ["a", "b", "d"] && topic.snapshotThroughOffset == 7)
    var watermark = update("t", epoch: 9, from: 7, [])
    (watermark.throughOffset, watermark.serverTimeMillis, watermark.complete) = (7, 300, true)
    let end = topic.apply(watermark, receivedAtMillis: 0)
    #expect(end.removed == ["b", "d"] && Set(topic.cards.keys) == ["a"] && topic.verifiedAtMillis == 300)
  }

  /// Reaching the whole snapshot's offset is not enough: short of a complete update, a card
  /// changed after the snapshot may still be on its way above that offset (a resume's
  /// catch-up brings each card at its latest version), so the awaited cards stay until the
  /// broker says the copy is exact.
  @Test func aSnapshotInPartsEndsOnlyAtACompleteUpdate() {
    var topic = TopicCache(topic: "t")
    _ = topic.apply(update("t", from: 1, [card("a", priority: 1), card("b", priority: 1), card("c", priority: 1)], snapshot: true), receivedAtMillis: 0)
    var firstPart = update("t", epoch: 8, from: 5, [card("b", priority: 2)], snapshot: true)
    firstPart.snapshotThroughOffset = 8
    _ = topic.apply(firstPart, receivedAtMillis: 0)
    let reached = topic.apply(update("t", epoch: 8, from: 8, [card("d", priority: 1)]), receivedAtMillis: 0)
    #expect(reached.removed.isEmpty && topic.awaitingSnapshot == ["a", "c"] && topic.position == 8)
    var changedSince = update("t", epoch: 8, from: 9, [card("c", priority: 4)])
    changedSince.complete = true
    let ended = topic.apply(changedSince, receivedAtMillis: 0)
    #expect(ended.removed == ["a"] && Set(topic.cards.keys) == ["b", "c", "d"] && topic.cards["c"]?.card.priority == 4)
    #expect(topic.awaitingSnapshot.isEmpty && topic.snapshotThroughOffset == nil)
  }

  /// A client that held nothing has nothing to await: its copy is verified with each part.
  @Test func aSnapshotInPartsToAnEmptyCopyAwaitsNothing() {
    var topic = TopicCache(topic: "t")
    var firstPart = update("t", from: 5, [card("b", priority: 2)], snapshot: true)
    (firstPart.snapshotThroughOffset, firstPart.serverTimeMillis) = (20, 200)
    _ = topic.apply(firstPart, receivedAtMillis: 0)
    #expect(topic.snapshotThroughOffset == nil && topic.awaitingSnapshot.isEmpty && topic.verifiedAtMillis == 200)
  }

  /// A new snapshot while one in parts is arriving starts over: a whole one removes every
  /// card it leaves out at once, the awaited ones included.
  @Test func aWholeSnapshotEndsOneInPartsAtOnce() {
    var topic = TopicCache(topic: "t")
    _ = topic.apply(update("t", from: 1, [card("a", priority: 1), card("b", priority: 1)], snapshot: true), receivedAtMillis: 0)
    var firstPart = update("t", from: 3, [card("b", priority: 2)], snapshot: true)
    firstPart.snapshotThroughOffset = 9
    _ = topic.apply(firstPart, receivedAtMillis: 0)
    let whole = topic.apply(update("t", epoch: 9, from: 1, [card("c", priority: 1)], snapshot: true), receivedAtMillis: 0)
    #expect(whole.removed == ["a", "b"] && Set(topic.cards.keys) == ["c"])
    #expect(topic.awaitingSnapshot.isEmpty && topic.snapshotThroughOffset == nil)
  }

  /// A clock skew within a second of the one noted is not noted (nor written): each update's
  /// sample differs by milliseconds, and expiry is in whole seconds.
  @Test func aClockSkewIsNotedOnlyWhenItMovesByASecond() throws {
    let cache = try CardCache(persistence: nil)
    cache.noteClockSkew(100_000)
    cache.noteClockSkew(100_400)
    cache.noteClockSkew(99_100)
    #expect(cache.clockSkewMillis == 100_000)
    cache.noteClockSkew(101_500)
    #expect(cache.clockSkewMillis == 101_500)
  }

  @Test func aRestartedClientHasItsCardsAndPositions() throws {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-cache-\(UInt32.random(in: 0...UInt32.max))/cache.sqlite").path
    defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
    do {
      let cache = try CardCache(persistence: SQLiteCachePersistence(path: path))
      var watermark = update("t", from: 1, [card("a", priority: 1), card("b", priority: 2)], snapshot: true)
      watermark.serverTimeMillis = 1234
      cache.apply(watermark, receivedAtMillis: 99_000)
      cache.apply(update("t", from: 3, [], removing: ["b"]), receivedAtMillis: 99_500)
      try cache.flush()
    }
    let reopened = try CardCache(persistence: SQLiteCachePersistence(path: path))
    let topic = try #require(reopened.topic("t"))
    #expect(topic.epoch == 7 && topic.position == 3 && topic.verifiedAtMillis == 1234)
    #expect(topic.cards.mapValues(\.card) == ["a": card("a", priority: 1)])
    #expect(topic.cards["a"]?.receivedAtMillis == 99_000)
    #expect(reopened.positions(for: ["t", "u"]) == [TopicPosition(topic: "t", epoch: 7, offset: 3), TopicPosition(topic: "u")])
  }

  /// A client restarted while a snapshot in parts was arriving still knows which cards await
  /// it, and drops them once the rest has come.
  @Test func aRestartedClientKeepsASnapshotInPartsPartWay() throws {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-cache-\(UInt32.random(in: 0...UInt32.max))/cache.sqlite").path
    defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
    do {
      let cache = try CardCache(persistence: SQLiteCachePersistence(path: path))
      cache.apply(update("t", from: 1, [card("a", priority: 1), card("b", priority: 1)], snapshot: true), receivedAtMillis: 0)
      var firstPart = update("t", from: 3, [card("b", priority: 2)], snapshot: true)
      firstPart.snapshotThroughOffset = 4
      cache.apply(firstPart, receivedAtMillis: 0)
      try cache.flush()
    }
    do {
      let reopened = try CardCache(persistence: SQLiteCachePersistence(path: path))
      let topic = try #require(reopened.topic("t"))
      #expect(Set(topic.cards.keys) == ["a", "b"] && topic.awaitingSnapshot == ["a"] && topic.snapshotThroughOffset == 4)
      var restUpdate = update("t", from: 4, [card("c", priority: 1)])
      restUpdate.complete = true
      let rest = reopened.apply(restUpdate, receivedAtMillis: 0)
      #expect(rest.removed == ["a"] && reopened.topic("t").map { Set($0.cards.keys) } == ["b", "c"])
      try reopened.flush()
    }
    let finished = try #require(try SQLiteCachePersistence(path: path).load().first)
    #expect(Set(finished.cards.keys) == ["b", "c"] && finished.awaitingSnapshot.isEmpty && finished.snapshotThroughOffset == nil)
  }

  /// A cache file written by a build before snapshots in parts opens with its cards; marks
  /// stored at another position than the topic's (an earlier build moved the topic on
  /// since) are stale, and ignored; and an earlier build can still write the file.
  @Test func aCacheFileFromAnEarlierBuildOpensAndMarksAtAnotherPositionAreIgnored() throws {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-cache-\(UInt32.random(in: 0...UInt32.max))/cache.sqlite").path
    defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
    try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    let earlier = try Self.databaseQueue(path)
    let bytes = card("a", priority: 1).serializedBytes()
    try earlier.write { db in
      try db.execute(
        sql: """
          CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
          INSERT INTO grdb_migrations VALUES ('v1');
          CREATE TABLE topic (name TEXT PRIMARY KEY NOT NULL, epoch INTEGER, position INTEGER, verifiedAtMillis INTEGER) WITHOUT ROWID;
          CREATE TABLE card (
            topic TEXT NOT NULL, cardID TEXT NOT NULL, card BLOB NOT NULL, offset INTEGER NOT NULL,
            receivedAtMillis INTEGER NOT NULL, PRIMARY KEY (topic, cardID)
          ) WITHOUT ROWID;
          INSERT INTO topic VALUES ('t', 7, 2, NULL);
          """)
      try db.execute(sql: "INSERT INTO card VALUES ('t', 'a', ?, 1, 0)", arguments: [Data(bytes)])
    }
    try earlier.close()
    let persistence = try SQLiteCachePersistence(path: path)
    var topic = try #require(try persistence.load().first)
    #expect(topic.position == 2 && topic.cards.mapValues(\.card) == ["a": card("a", priority: 1)])

    (topic.snapshotThroughOffset, topic.awaitingSnapshot) = (9, ["a"])
    try persistence.save([topic], clockSkewMillis: nil)
    // An earlier build's own writes, positional as they were: the file still takes them.
    try Self.databaseQueue(path).write { db in
      try db.execute(sql: "INSERT OR REPLACE INTO topic VALUES ('t', 7, 5, NULL)")
      try db.execute(sql: "INSERT OR REPLACE INTO card VALUES ('t', 'a', ?, 4, 0)", arguments: [Data(bytes)])
    }
    let moved = try #require(try persistence.load().first)
    #expect(moved.position == 5 && moved.cards["a"]?.offset == 4 && moved.awaitingSnapshot.isEmpty && moved.snapshotThroughOffset == nil)
  }

  /// A cache file whose value is not of its column's type (written by something else, or
  /// damaged) fails to load with a ``StoredRowError`` naming the table — not a crash, and
  /// not a silent 0 for the offset.
  @Test("a value of the wrong type", arguments: [
    ("UPDATE topic SET epoch = 'x'", "topic", "column: \"epoch\""),
    ("UPDATE topic SET name = x'ff'", "topic", "column: \"name\""),
    ("UPDATE card SET offset = 'x'", "card", "column: \"offset\""),
    ("UPDATE card SET card = x'0a'", "card", "the card's bytes are no card (truncated input"),
  ])
  func aCacheFileWithAValueOfTheWrongTypeDoesNotLoad(corruption: String, table: String, message: String) throws {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-cache-\(UInt32.random(in: 0...UInt32.max))/cache.sqlite").path
    defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
    let cache = try CardCache(persistence: SQLiteCachePersistence(path: path))
    cache.apply(update("t", from: 1, [card("a", priority: 1)], snapshot: true), receivedAtMillis: 99_000)
    try cache.flush()
    try Self.databaseQueue(path).write { try $0.execute(sql: corruption) }
    #expect {
      try SQLiteCachePersistence(path: path).load()
    } throws: { error in
      guard let error = error as? StoredRowError else { return false }
      return error.table == table && error.message.contains(message)
    }
  }

  /// The test's own connection to a cache file, waiting up to 5 s for it as the cache does: a
  /// cache just let go of may still be closing it.
  static func databaseQueue(_ path: String) throws -> DatabaseQueue {
    var configuration = Configuration()
    configuration.busyMode = .timeout(5)
    return try DatabaseQueue(path: path, configuration: configuration)
  }
}
