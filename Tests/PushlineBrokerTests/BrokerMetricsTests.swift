@testable import PushlineBroker
import MetricsTestKit
import PushlineRPC
import PushlineSchema
import PushlineTesting
import Testing

@Suite("Broker metrics")
struct BrokerMetricsTests {
  @Test func publishesDeliveriesCoalescingAndSubscriptionsAreCounted() async throws {
    let metrics = TestMetrics()
    let clock = ManualWallClock()
    let broker = try await Broker(
      storage: InMemoryBrokerStorage(),
      configuration: BrokerConfiguration(nowMillis: clock.function, metrics: BrokerMetrics(factory: metrics)))
    let subscription = try broker.subscribe("t")
    _ = try await broker.nextUpdates(for: subscription)  // the empty snapshot
    try await broker.publish("t", [card("a", 1), card("b", 1)])
    try await broker.publish("t", [card("a", 2)])
    let delivered = try await broker.nextUpdates(for: subscription)
    #expect(delivered.flatMap(\.changes).map(\.cardID) == ["b", "a"])
    broker.tick()

    #expect(try metrics.expectCounter("pushline_publishes_total").totalValue == 2)
    #expect(try metrics.expectCounter("pushline_published_changes_total").totalValue == 3)
    #expect(try metrics.expectCounter("pushline_coalesced_changes_total").totalValue == 1)
    #expect(try metrics.expectCounter("pushline_delivered_changes_total").totalValue == 2)
    #expect(try metrics.expectGauge("pushline_subscriptions").lastValue == 1)
    #expect(try metrics.expectGauge("pushline_queued_changes").lastValue == 0)
    #expect(try metrics.expectGauge("pushline_longest_queue_changes").lastValue == 0)
    // A second subscriber that reads nothing: its queue is the longest, the first's is empty.
    let idle = try broker.subscribe("t")
    _ = try await broker.nextUpdates(for: idle)
    try await broker.publish("t", [card("c", 1), card("d", 1)])
    _ = try await broker.nextUpdates(for: subscription)
    try await broker.publish("t", [card("e", 1)])
    broker.tick()
    #expect(try metrics.expectGauge("pushline_queued_changes").lastValue == 4)
    #expect(try metrics.expectGauge("pushline_longest_queue_changes").lastValue == 3)
    broker.unsubscribe(idle)
    broker.unsubscribe(subscription)
    #expect(try metrics.expectGauge("pushline_subscriptions").lastValue == 0)
  }

  /// Refused publishes are counted, and so is each queue that passes its bound and is replaced
  /// by a snapshot (its dropped changes count nowhere else), when it does.
  @Test func refusalsAndOverflowsAreCounted() async throws {
    let metrics = TestMetrics()
    let clock = ManualWallClock()
    let broker = try await Broker(
      storage: InMemoryBrokerStorage(),
      configuration: BrokerConfiguration(maxQueuedChangesPerSubscription: 2, nowMillis: clock.function, metrics: BrokerMetrics(factory: metrics)))
    await #expect(throws: RPCError.self) { try await broker.publish("bad topic", [card("a", 1)]) }
    await #expect(throws: RPCError.self) { try await broker.publish("t", [card("a", 1)], key: "") }
    #expect(try metrics.expectCounter("pushline_refused_publishes_total").totalValue == 2)
    let slow = try broker.subscribe("t")
    _ = try await broker.nextUpdates(for: slow)
    try await broker.publish("t", [card("a", 1), card("b", 1), card("c", 1)])  // past the bound of 2
    // Counted when it overflows, before the subscriber reads again (it may never).
    #expect(try metrics.expectCounter("pushline_queue_overflows_total").totalValue == 1)
    let resent = try await broker.nextUpdates(for: slow)
    #expect(resent.first?.isSnapshot == true)
    #expect(try metrics.expectCounter("pushline_queue_overflows_total").totalValue == 1)
    broker.unsubscribe(slow)
  }
}
