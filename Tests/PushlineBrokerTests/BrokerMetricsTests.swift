@testable import PushlineBroker
import MetricsTestKit
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
}
