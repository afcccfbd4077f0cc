import PushlineClient
import PushlineSchema
import Testing

@testable import PushlineCLI

@Suite("The tracker as text")
struct TrackerViewTests {
  /// A card's `lastUpdatedAt` is the publisher's word, forwarded byte for byte: one so far off
  /// that its age overflows `Int64` reads "?" rather than crashing the watcher.
  @Test(arguments: [(Int64.min, "updated ? ago"), (1_799_999_820, "updated 3 min ago")])
  func theAgeOfAStaleCard(lastUpdatedAt: Int64, shown: String) throws {
    var card = TrackerCard(cardID: "today", priority: 1, isValid: true)
    card.lastUpdatedAt = lastUpdatedAt
    card.outageState = OutageState()
    card.outageState?.isInOutage = true
    var payload = TrackerCardPayload()
    payload.trackerDailyEarningsCard = TrackerDailyEarningsCard(title: "Today")
    card.payload = payload
    var snapshot = TopicUpdate(topic: "earnings", epoch: 1, throughOffset: 1)
    snapshot.snapshot = true
    snapshot.changes = [CardChange(upserting: card, offset: 1)]
    let tracker = TrackerDataManager(
      cache: try CardCache(persistence: nil), topics: ["earnings"], configuration: .init(nowMillis: { 1_800_000_000_000 }))
    tracker.apply([snapshot])
    let item = try #require(tracker.modes.browse.first)
    #expect(TrackerView.item(item, nowMillis: 1_800_000_000_000).hasSuffix("(\(shown) · service outage)"))
  }
}
