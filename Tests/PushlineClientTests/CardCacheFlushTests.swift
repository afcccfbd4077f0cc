import Foundation
import PushlineClient
import PushlineSchema
import Testing

@Suite("CardCache: flushes")
struct CardCacheFlushTests {
  /// A flush is one write: the clock skew goes with the topics, never in a transaction of its
  /// own, so a crash cannot store one without the other.
  @Test func aFlushWritesTheChangedTopicsAndTheClockSkewInOneSave() throws {
    let persistence = RecordingPersistence()
    let cache = try CardCache(persistence: persistence)
    cache.noteClockSkew(100_000)
    cache.apply(update("t", from: 1, [card("a", priority: 1)], snapshot: true), receivedAtMillis: 0)
    try cache.flush()
    #expect(persistence.saves.map(\.clockSkewMillis) == [100_000])
    #expect(persistence.saves.map { $0.topics.map(\.position) } == [[1]])
  }

  /// A flush that fails keeps both the topics and the clock skew for the next, which writes
  /// them together.
  @Test func aFailedFlushLeavesTheTopicsAndTheClockSkewForTheNext() throws {
    let persistence = RecordingPersistence(firstSave: .fails)
    let cache = try CardCache(persistence: persistence)
    cache.noteClockSkew(100_000)
    cache.apply(update("t", from: 1, [card("a", priority: 1)], snapshot: true), receivedAtMillis: 0)
    #expect(throws: RecordingPersistence.failure) { try cache.flush() }
    try cache.flush()
    #expect(persistence.saves == [RecordingPersistence.Save(topics: [try #require(cache.topic("t"))], clockSkewMillis: 100_000)])
  }

  /// The SQLite persistence writes the topics and the clock skew of a save in one
  /// transaction: a save that fails stores neither, and one without a skew keeps the stored one.
  @Test func theSQLitePersistenceStoresTheTopicsAndTheClockSkewOfASaveTogether() throws {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-cache-\(UInt32.random(in: 0...UInt32.max))/cache.sqlite").path
    defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
    let a = CachedCard(topic: "t", card: card("a", priority: 1), offset: 1, receivedAtMillis: 0)
    let topic = TopicCache(topic: "t", epoch: 7, position: 1, cards: ["a": a])
    try SQLiteCachePersistence(path: path).save([topic], clockSkewMillis: 100_000)
    let persistence = try SQLiteCachePersistence(path: path)
    #expect(try persistence.load() == [topic])
    #expect(try persistence.loadClockSkew() == 100_000)

    var moved = topic
    moved.position = 2
    try persistence.save([moved], clockSkewMillis: nil)
    #expect(try persistence.load() == [moved])
    #expect(try persistence.loadClockSkew() == 100_000)

    var broken = topic  // two entries of one card: its second row breaks the table's key
    broken.cards["b"] = a
    #expect(throws: (any Error).self) { try persistence.save([broken], clockSkewMillis: 200_000) }
    #expect(try persistence.load() == [moved])
    #expect(try persistence.loadClockSkew() == 100_000)
  }
}
