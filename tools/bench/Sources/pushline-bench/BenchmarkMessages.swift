import PushlineSchema

/// The messages every implementation encodes and decodes: one representative card and a
/// batch of 50 varied cards, built through Pushline's API. The peers get the same values
/// copied field by field into their own types (`SwiftProtobufMessages.swift`,
/// `ProtobufCMessages.swift`), never Pushline's bytes.
enum BenchmarkMessages {
  /// A recent-trips card with all seven fields filled, and every field of the card and its
  /// outage state set.
  static var card: TrackerCard {
    var trips = TrackerRecentTripsCard(title: "Last trip")
    trips.formattedTotal = "$18.42"
    trips.formattedRequestAt = "Today 9:41 AM"
    trips.vehicleStatusDescription = "Online · UberX · Toyota Prius"
    trips.callToAction = "See trip details"
    trips.bulletinTitle = "Trip complete"
    trips.lastTripUuid = "6f1c2a9e-3b7d-4c52-9a80-1e2f3a4b5c6d"
    var card = TrackerCard(cardID: "earnings/last-trip", priority: 10.5, isValid: true)
    card.payload = TrackerCardPayload()
    card.payload?.trackerRecentTripsCard = trips
    card.cardType = .browse
    card.expiresAt = 1_763_830_800
    card.lastUpdatedAt = 1_763_827_200
    var outage = OutageState()
    outage.isInOutage = false
    outage.message = "Earnings may be delayed"
    outage.since = 1_763_820_000
    outage.serviceName = "driver-earnings"
    card.outageState = outage
    card.shouldForceSwitchStatusMode = false
    card.statusModePriority = 3
    return card
  }

  /// Fifty cards cycling through the five payload kinds.
  static var batch: TrackerCardBatch {
    TrackerCardBatch(cards: (0..<50).map(card(number:)))
  }

  private static func card(number: Int) -> TrackerCard {
    var card = TrackerCard(cardID: "driver/\(1_000 + number)/card-\(number)", priority: Double(number) / 4, isValid: number % 7 != 0)
    var payload = TrackerCardPayload()
    let money = Money(currencyCode: "USD", minorUnits: Int64(1_000 + number * 137))
    switch number % 5 {
    case 0:
      card = Self.card
      card.cardID = "driver/\(1_000 + number)/last-trip"
    case 1:
      var daily = TrackerDailyEarningsCard(title: "Today")
      daily.formattedTotal = "$\(10 + number).37"
      daily.total = money
      daily.tripCount = UInt32(number)
      daily.onlineSeconds = UInt32(number * 600)
      daily.formattedOnlineTime = "\(number / 6) h \(number % 6 * 10) min"
      daily.dayStartsAt = 1_763_769_600
      payload.trackerDailyEarningsCard = daily
    case 2:
      var weekly = TrackerWeeklyEarningsCard(title: "This week")
      weekly.formattedTotal = "$\(400 + number).00"
      weekly.total = money
      weekly.tripCount = UInt32(40 + number)
      weekly.weekStartsAt = 1_763_337_600
      weekly.weekEndsAt = 1_763_942_400
      weekly.dailyMinorUnits = [12_000, 9_800, 0, 15_250, -300, 22_000, Int64(number * 100)]
      payload.trackerWeeklyEarningsCard = weekly
    case 3:
      var quest = TrackerDxGyProgressCard(title: "Weekend quest")
      quest.questID = "quest-\(number)"
      quest.completedTrips = UInt32(number % 20)
      quest.targetTrips = 20
      quest.reward = money
      quest.formattedReward = "$25 extra"
      quest.endsAt = 1_763_942_400
      quest.progress = Float(number % 20) / 20
      quest.tiers = [DxGyTier(trips: 10, reward: Money(currencyCode: "USD", minorUnits: 1_000)),
                     DxGyTier(trips: 20, reward: Money(currencyCode: "USD", minorUnits: 2_500))]
      payload.trackerDxGyProgressCard = quest
      card.cardType = .browse
    default:
      var done = TrackerDxGyCompletionCard(title: "Quest complete!")
      done.questID = "quest-\(number)"
      done.bulletinTitle = "You earned $25"
      done.reward = money
      done.completedTrips = 20
      done.completedAt = 1_763_900_000
      payload.trackerDxGyCompletionCard = done
      card.cardType = .bulletin
    }
    if number % 5 != 0 {
      card.payload = payload
      card.expiresAt = 1_763_942_400
      card.lastUpdatedAt = 1_763_900_000 + Int64(number)
    }
    return card
  }
}
