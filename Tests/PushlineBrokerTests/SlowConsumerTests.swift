import NIOCore
import NIOPosix
@testable import PushlineBroker
import PushlineRPC
@testable import PushlineRPCNIO
import PushlineSchema
import PushlineWire
import Synchronization
import Testing

/// A subscriber that stops reading while a publisher hammers its topic: the broker's memory
/// for it stays bounded by the topic's cards (newer versions replace queued ones), another
/// subscriber of the same topic is not slowed, and once the slow one reads again it reaches
/// exactly the publishers' state.
@Suite("A slow consumer over loopback")
struct SlowConsumerTests {
  static let cardCount = 20

  static func card(_ index: Int, version: Int) -> TrackerCard {
    var card = TrackerCard(cardID: "c\(index)", priority: Double(version), isValid: true)
    card.lastUpdatedAt = Int64(version)
    var trip = TrackerRecentTripsCard(title: String(repeating: "x", count: 4000))  // big, to fill the socket buffers fast
    trip.formattedTotal = "$\(version)"
    card.payload = TrackerCardPayload()
    card.payload?.trackerRecentTripsCard = trip
    return card
  }

  @Test func memoryStaysBoundedAndTheSlowSubscriberCatchesUpExactly() async throws {
    try await BrokerLoopbackTests.withBroker { harness in
      let topic = "driver/slow"
      let readerToken = try await harness.token(.subscriber, [topic])
      let publisherToken = try await harness.token(.publisher, [topic])

      // The slow subscriber: raw bytes, reads disabled.
      let request = SubscribeRequest(topics: [TopicPosition(topic: topic)])
      let slow = try await RawSubscriber.subscribe(port: harness.port, token: readerToken, request: request)
      while harness.broker.subscriptionCount < 1 { await Task.yield() }

      try await harness.connect(token: readerToken) { fast in
        var fastUpdates = fast.serverStreaming(BrokerService.subscribeMethod, request: request, response: TopicUpdate.self).makeAsyncIterator()
        var fastReplica = TopicReplica()
        var truth: [String: TrackerCard] = [:]
        try await harness.connect(token: publisherToken) { publisher in
          for version in 1...3000 {
            let next = Self.card(version % Self.cardCount, version: version)
            truth[next.cardID] = next
            _ = try await publisher.unary(
              BrokerService.publishMethod, request: PublishRequest(topic: topic, changes: [CardChange(upserting: next)]),
              response: PublishResponse.self)
            // The fast subscriber keeps up as it goes.
            if version % 100 == 0 {
              while fastReplica.position ?? 0 < Int64(version) { fastReplica.apply(try #require(try await fastUpdates.next())) }
            }
          }
        }
        #expect(fastReplica.cards == truth && fastReplica.violations.isEmpty)

        // The broker held at most one queued change per card for the stalled subscriber, and
        // had to coalesce to do so — its queue's slots too, not only its count: the holes the
        // replaced versions left do not pile up with the publishes.
        let queues = harness.broker.state.withLock { Array($0.subscriptions.values) }.map { subscription in
          subscription.state.withLock { ($0.queue.changeCount, $0.queue.coalescedCount, $0.queue.slotCount) }
        }
        #expect(queues.allSatisfy { $0.0 <= Self.cardCount && $0.2 <= 2 * Self.cardCount + 1024 }, "\(queues)")
        #expect(queues.contains { $0.1 > 0 }, "the stalled subscriber never made the broker coalesce: \(queues)")

        // Reading again, the slow subscriber ends with exactly the publishers' state.
        var slowReplica = TopicReplica()
        try await slow.readContinuously()
        while slowReplica.cards != truth {
          for update in try await slow.nextUpdates() { slowReplica.apply(update) }
        }
        #expect(slowReplica.violations.isEmpty)
      }
      await slow.close()
    }
  }
}
