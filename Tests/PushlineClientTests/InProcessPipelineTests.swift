import PushlineBroker
import PushlineClient
import PushlineRPC
import PushlineSchema
import PushlineTesting
import Synchronization
import Testing

/// Broker and client in one process, cut at random moments: whatever the interleaving, the
/// client's cache ends equal to the publishers' state — without a snapshot after the first
/// load, unless a tiny queue bound forces one (odd seeds), which must converge all the same.
@Suite("Broker and client in process")
struct InProcessPipelineTests {
  /// Each session is cut after `budget()` updates.
  final class Cutting: TrackerConnector {
    let inner: InProcessTrackerConnector
    let cuts: Mutex<SplitMix64>
    let snapshots = Mutex(0)

    init(inner: InProcessTrackerConnector, seed: UInt64) {
      self.inner = inner
      cuts = Mutex(SplitMix64(seed: seed))
    }

    func withSession(_ body: (any TrackerSession) async throws -> Void) async throws {
      let budget = Int(cuts.withLock { $0.next() % 40 }) + 1
      try await inner.withSession { session in try await body(Session(inner: session, budget: budget, owner: self)) }
    }

    struct Session: TrackerSession {
      var inner: any TrackerSession
      var budget: Int
      var owner: Cutting
      func cards(in topic: String) async throws -> TopicUpdate { try await inner.cards(in: topic) }
      func updates(from positions: [TopicPosition]) -> AsyncThrowingStream<TopicUpdate, any Error> {
        let left = Mutex(budget)
        let owner = self.owner
        return .relaying(inner.updates(from: positions)) { update in
          if update.isSnapshot { owner.snapshots.withLock { $0 += 1 } }
          // The update at the end of the budget is the last one relayed.
          if left.withLock({ $0 -= 1; return $0 }) < 0 { throw RPCError(code: .unavailable, message: "cut") }
        }
      }
    }
  }

  @Test(arguments: 0..<8)
  func randomCutsConvergeToThePublishersState(seed: Int) async throws {
    var random = SplitMix64(seed: UInt64(seed) + 1000)
    let tinyQueue = seed % 2 == 1
    let broker = try await Broker(
      storage: InMemoryBrokerStorage(), configuration: BrokerConfiguration(maxQueuedChangesPerSubscription: tinyQueue ? 4 : 100_000))
    let publisher = Principal(subject: "svc", role: .publisher, topics: ["*"], expiresAtMillis: .max)
    let reader = Principal(subject: "driver", role: .subscriber, topics: ["d/*"], expiresAtMillis: .max)
    let topics = ["d/earnings", "d/incentives"]
    let connector = Cutting(inner: InProcessTrackerConnector(broker: broker, principal: reader), seed: UInt64(seed))
    let tracker = TrackerDataManager(cache: try CardCache(persistence: nil), topics: topics)
    let manager = ConnectionManager(
      connector: connector, services: topics.map { ServiceDataManager(name: $0, topic: $0) }, tracker: tracker,
      backoff: Backoff(initial: .milliseconds(1), maximum: .milliseconds(2)))
    let running = Task { await manager.run() }
    var truth: [String: [String: TrackerCard]] = [:]
    for version in 1...600 {
      let topic = topics[Int(random.next() % 2)]
      let id = "c\(random.next() % 9)"
      if random.next() % 4 == 0 {
        _ = try await broker.publish(PublishRequest(topic: topic, changes: [CardChange(removing: id)]), for: publisher)
        truth[topic, default: [:]][id] = nil
      } else {
        let card = TrackerCard(cardID: id, priority: Double(version), isValid: true)
        _ = try await broker.publish(PublishRequest(topic: topic, changes: [CardChange(upserting: card)]), for: publisher)
        truth[topic, default: [:]][id] = card
      }
    }
    let final = truth
    let converged = await withTaskGroup(of: Bool.self) { group in
      group.addTask {
        for await _ in tracker.modeUpdates()
        where topics.allSatisfy({ (tracker.cache.topic($0)?.cards.mapValues(\.card) ?? [:]) == (final[$0] ?? [:]) }) {
          return true
        }
        return false
      }
      group.addTask {
        try? await Task.sleep(for: .seconds(20))
        return false
      }
      let result = await group.next() ?? false
      group.cancelAll()
      return result
    }
    running.cancel()
    await running.value
    #expect(converged, "seed \(seed)")
    if !tinyQueue { #expect(connector.snapshots.withLock { $0 } == 0, "seed \(seed)") }
  }
}
