@testable import PushlineBroker
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import PushlineTesting
import Synchronization
import Testing

/// The delivery contract over real sockets: a publisher changes and removes cards while a
/// subscriber reads only now and then — so that the broker's side of its connection fills
/// and the broker coalesces — and drops its connection at random points, each time resuming
/// from the position its copy reached. Every update must keep the contract, and the copy must
/// end exactly at the publishers' state. Odd seeds give the broker a tiny queue bound, so that
/// resumes and overflows also end in snapshots.
@Suite("The delivery contract over loopback")
struct LoopbackDeliveryContractTests {
  static let topic = "driver/contract"
  static let cardCount = 10

  static func card(_ index: Int, version: Int) -> TrackerCard {
    var card = TrackerCard(cardID: "c\(index)", priority: Double(version), isValid: true)
    card.payload = TrackerCardPayload()
    card.payload?.trackerRecentTripsCard = TrackerRecentTripsCard(title: String(repeating: "x", count: 4_000))
    return card
  }

  @Test(arguments: 0..<6)
  func randomDropsOfASlowSubscriberKeepTheContract(seed: Int) async throws {
    var random = SplitMix64(seed: UInt64(seed) + 4_000)
    try await BrokerLoopbackTests.withBroker(configure: { $0.maxQueuedChangesPerSubscription = seed % 2 == 1 ? 4 : 100_000 }) { harness in
      let readerToken = try await harness.token(.subscriber, [Self.topic])
      let publisherToken = try await harness.token(.publisher, [Self.topic])
      var replica = TopicReplica()
      var truth: [String: TrackerCard] = [:]
      /// Whether the broker holds the subscription to its bound now: it has coalesced queued
      /// changes, or (past a tiny bound) dropped them for a snapshot once the client reads.
      func stallIsBounded() -> Bool {
        harness.broker.state.withLock { Array($0.subscriptions.values) }.contains { subscription in
          subscription.state.withLock(\.queue.coalescedCount) > 0 || !subscription.topicsNeedingSnapshot.isEmpty
        }
      }
      func subscribe() async throws -> RawSubscriber {
        let position = TopicPosition(topic: Self.topic, epoch: replica.epoch, offset: replica.position)
        return try await RawSubscriber.subscribe(
          port: harness.port, token: readerToken, request: SubscribeRequest(topics: [position]), receiveBuffer: 4096)
      }
      /// Drops the connection — what arrived whole counts, the rest is lost — and resumes.
      func dropAndResume(_ subscriber: RawSubscriber) async throws -> RawSubscriber {
        await subscriber.close()
        for update in try subscriber.takeUpdates() { replica.apply(update) }
        return try await subscribe()
      }
      var subscriber = try await subscribe()
      try await harness.connect(token: publisherToken) { publisher in
        func publish(_ version: Int, cards: Int) async throws {
          var changes: [CardChange] = []
          for index in Set((0..<cards).map { _ in Int(random.next() % UInt64(Self.cardCount)) }) {
            if random.next() % 5 == 0 {
              changes.append(CardChange(removing: "c\(index)"))
              truth["c\(index)"] = nil
            } else {
              let card = Self.card(index, version: version)
              changes.append(CardChange(upserting: card))
              truth[card.cardID] = card
            }
          }
          _ = try await publisher.unary(
            BrokerService.publishMethod, request: PublishRequest(topic: Self.topic, changes: changes), response: PublishResponse.self)
        }
        for version in 1...300 where replica.violations.isEmpty {
          try await publish(version, cards: Int(random.next() % 4) + 1)
          switch random.next() % 20 {
          case 0...3: subscriber.read()
          case 4: subscriber = try await dropAndResume(subscriber)
          default: break
          }
          for update in try subscriber.takeUpdates() { replica.apply(update) }
        }
        // A stall long enough that the broker must bound what it holds, then a drop in the
        // middle of it.
        var version = 300
        while !stallIsBounded() {
          version += 1
          try #require(version <= 5_000, "seed \(seed): the broker never bounded the stalled subscriber's queue")
          try await publish(version, cards: 1)
        }
        subscriber = try await dropAndResume(subscriber)
      }
      try await subscriber.readContinuously()
      while replica.violations.isEmpty, replica.cards != truth {
        for update in try await subscriber.nextUpdates() { replica.apply(update) }
        if let status = subscriber.status { Issue.record("the stream ended: \(status)"); break }
      }
      await subscriber.close()
      #expect(replica.violations.isEmpty, "seed \(seed): \(replica.violations.prefix(3))")
      #expect(replica.cards == truth, "seed \(seed)")
    }
  }
}
