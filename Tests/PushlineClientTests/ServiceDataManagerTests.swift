import PushlineClient
import PushlineRPC
import PushlineSchema
import PushlineTesting
import Synchronization
import Testing

/// A service applies only its own topic's updates: a broker that answers a pull or a
/// subscription with another topic breaks the protocol, and its answer neither lands in the
/// cache nor makes the subscription count as answered.
@Suite("ServiceDataManager")
struct ServiceDataManagerTests {
  let clock = ManualWallClock()

  /// A session whose pull answers `pulled` and whose subscription streams `streamed`, then ends.
  struct FixedSession: TrackerSession {
    let pulled: TopicUpdate
    let streamed: [TopicUpdate]

    func cards(in topic: String) async throws -> TopicUpdate { pulled }

    func updates(from positions: [TopicPosition]) -> AsyncThrowingStream<TopicUpdate, any Error> {
      let streamed = streamed
      return AsyncThrowingStream { continuation in
        for update in streamed { continuation.yield(update) }
        continuation.finish()
      }
    }
  }

  @Test func anUpdateOfAnotherTopicEndsTheSessionUnapplied() async throws {
    let rogue = update("rogue", from: 1, [card("x", priority: 1)], snapshot: true)
    for session in [FixedSession(pulled: confirmation("t"), streamed: [rogue]), FixedSession(pulled: rogue, streamed: [])] {
      let tracker = TrackerDataManager(cache: try CardCache(persistence: nil), topics: ["t"], configuration: .init(nowMillis: clock.function))
      let answered = Mutex(false)
      await #expect(throws: RPCError(code: .internal, message: "the broker sent an update of rogue for t")) {
        try await ServiceDataManager(name: "t", topic: "t").run(in: session, tracker: tracker) { answered.withLock { $0 = true } }
      }
      #expect(tracker.cache.topic("rogue") == nil && !answered.withLock { $0 })
    }
  }

  /// A change that brings another card than it names (card z as a) is refused the same way:
  /// the cache keyed it by a and stored it by z, and the clash aborted every later save.
  @Test func aChangeBringingAnotherCardEndsTheSessionUnapplied() async throws {
    var mismatched = update("t", from: 1, [card("z", priority: 1)], snapshot: true)
    mismatched.changes[0].cardID = "a"
    let tracker = TrackerDataManager(cache: try CardCache(persistence: nil), topics: ["t"], configuration: .init(nowMillis: clock.function))
    await #expect(throws: RPCError(code: .internal, message: "the broker sent card z as a in t")) {
      try await ServiceDataManager(name: "t", topic: "t").run(in: FixedSession(pulled: mismatched, streamed: []), tracker: tracker) {}
    }
    #expect(tracker.cache.topic("t")?.cards.isEmpty ?? true)
  }
}
