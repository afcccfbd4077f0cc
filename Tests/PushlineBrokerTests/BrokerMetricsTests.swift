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
    broker.unsubscribe(subscription)
    #expect(try metrics.expectGauge("pushline_subscriptions").lastValue == 0)
  }
}
