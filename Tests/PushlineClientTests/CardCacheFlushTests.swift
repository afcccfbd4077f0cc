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

  /// Flushes write one at a time: the write-behind task's flush, held in its save with the
  /// topic at position 1, and the session's end flushing position 2 meanwhile, do not
  /// overlap, and the copy stored last is the newest. Ten rounds: were flushes not one at a
  /// time, the second would overlap the first only if it reached its save before the first is
  /// let go — nearly always, but no signal can wait for it, as none would come while flushes
  /// are one at a time.
  @Test(.timeLimit(.minutes(1))) func overlappingFlushesWriteOneAtATimeNewestLast() async throws {
    for _ in 1...10 {
      let persistence = RecordingPersistence(firstSave: .isHeld)
      let cache = try CardCache(persistence: persistence)
      var started = persistence.started.makeAsyncIterator()
      cache.apply(update("t", from: 1, [card("a", priority: 1)], snapshot: true), receivedAtMillis: 0)
      async let first: Void = onThread { try cache.flush() }
      #expect(await started.next()?.topics.map(\.position) == [1])  // held in its save
      cache.apply(update("t", from: 2, [card("b", priority: 1)]), receivedAtMillis: 0)
      let (secondFlushing, flushing) = AsyncStream<Void>.makeStream()
      async let second: Void = onThread {
        flushing.yield()
        try cache.flush()
      }
      var signals = secondFlushing.makeAsyncIterator()
      await signals.next()
      persistence.release()
      try await first
      try await second
      #expect(!persistence.overlapped)
      #expect(persistence.saves.map { $0.topics.map(\.position) } == [[1], [2]])
      #expect(persistence.topic("t")?.position == 2)
    }
  }

  /// Runs `body` on a thread of its own, which it may block (a flush is synchronous, and the
  /// cooperative pool must not be), and returns when it does.
  private func onThread(_ body: @escaping @Sendable () throws -> Void) async throws {
    try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
      Thread {
        do {
          try body()
          done.resume()
        } catch {
          done.resume(throwing: error)
        }
      }.start()
    }
  }
}
