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

  /// A tracker of two topics on a fixed clock.
  static func tracker() throws -> TrackerDataManager {
    TrackerDataManager(
      cache: try CardCache(persistence: nil), topics: ["earnings", "incentives"], configuration: .init(nowMillis: { 1_800_000_000_000 }))
  }

  /// A snapshot of `topic` with `cards`, vouched for at `serverTimeMillis` when given.
  static func snapshot(_ topic: String, _ cards: [TrackerCard], serverTimeMillis: Int64? = nil) -> TopicUpdate {
    var snapshot = TopicUpdate(topic: topic, epoch: 1, throughOffset: Int64(cards.count))
    snapshot.snapshot = true
    snapshot.serverTimeMillis = serverTimeMillis
    snapshot.changes = cards.enumerated().map { CardChange(upserting: $1, offset: Int64($0 + 1)) }
    return snapshot
  }

  /// A daily earnings browse card.
  static func today(_ id: String) -> TrackerCard {
    var card = TrackerCard(cardID: id, priority: 1, isValid: true)
    var payload = TrackerCardPayload()
    payload.trackerDailyEarningsCard = TrackerDailyEarningsCard(title: id)
    card.payload = payload
    return card
  }

  /// A bulletin kept from before privacy mode was turned on shows no amount in the frame drawn
  /// after, and shows it again once privacy mode is off.
  @Test func privacyModeHidesTheAmountsOfBulletinsAlreadyShown() async throws {
    let tracker = try Self.tracker()
    var bulletins = tracker.bulletins().makeAsyncIterator()
    var card = TrackerCard(cardID: "trip-2", priority: 0, isValid: true)
    card.cardType = .bulletin
    var trip = TrackerRecentTripsCard(title: "Trip 2")
    trip.bulletinTitle = "Trip 2 complete"
    trip.formattedTotal = "$9.40"
    var payload = TrackerCardPayload()
    payload.trackerRecentTripsCard = trip
    card.payload = payload
    tracker.apply([Self.snapshot("earnings", [card])])
    let bulletin = try #require(await bulletins.next())
    tracker.setPrivacy(true)
    let hidden = TrackerView.frame(tracker.modes, bulletins: [bulletin], nowMillis: 1_800_000_000_000, title: "t")
    #expect(!hidden.joined(separator: "\n").contains("$9.40"))
    #expect(hidden.contains("  Trip 2 complete · ••••"))
    tracker.setPrivacy(false)
    let shown = TrackerView.frame(tracker.modes, bulletins: [bulletin], nowMillis: 1_800_000_000_000, title: "t")
    #expect(shown.contains("  Trip 2 complete · $9.40"))
  }

  /// "verified at" speaks for every card shown: while one of them is of a topic never
  /// verified, the title says so instead of the other topics' time.
  @Test func theVerifiedTimeIsShownOnlyWhenEveryTopicShownWasVerified() throws {
    let tracker = try Self.tracker()
    tracker.apply([Self.snapshot("earnings", [Self.today("today")], serverTimeMillis: 1_800_000_000_000)])
    let verified = TrackerView.frame(tracker.modes, bulletins: [], nowMillis: 1_800_000_000_000, title: "t")[0]
    #expect(verified.hasSuffix(" · verified at \(TrackerView.clock(1_800_000_000_000))"))
    tracker.apply([Self.snapshot("incentives", [Self.today("week")])])  // no server time: not vouched for
    let partly = TrackerView.frame(tracker.modes, bulletins: [], nowMillis: 1_800_000_000_000, title: "t")[0]
    #expect(partly.hasSuffix(" · not verified yet"))
    #expect(!partly.contains("verified at"))
  }
}
