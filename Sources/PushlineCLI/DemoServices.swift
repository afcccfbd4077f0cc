import Foundation
import PushlineBroker
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema

/// The demo's simulated backend services, publishing realistic cards over Pushline RPC as
/// real services would: earnings (a trip completes every `tripInterval`: the last-trip card,
/// today's and this week's totals, a trip bulletin) and incentives (a quest progresses with
/// each trip, completes with a bulletin and forces the status mode to it, then a new one starts).
struct DemoServices {
  var host: String
  var port: Int
  var token: String
  var driver: String
  var tripInterval: Duration
  var nowMillis: @Sendable () -> Int64

  var earningsTopic: String { "driver/\(driver)/earnings" }
  var incentivesTopic: String { "driver/\(driver)/incentives" }

  /// Publishes until cancelled.
  func run() async throws {
    var configuration = ClientConnectionStateMachine.Configuration()
    configuration.authToken = token
    try await RPCClient.withConnection(host: host, port: port, configuration: configuration) { connection in
      var random = SystemRandomNumberGenerator()
      var day = (cents: Int64(0), trips: 0)
      var week = (cents: Int64(41_250), trips: 23)
      var quest = (number: 1, done: 0, target: 3)
      try await publish(connection, incentivesTopic, [questCard(quest)])
      while !Task.isCancelled {
        try await Task.sleep(for: tripInterval)
        let fare = Int64.random(in: 650...2_450, using: &random)
        day = (day.cents + fare, day.trips + 1)
        week = (week.cents + fare, week.trips + 1)
        try await publish(
          connection, earningsTopic,
          [lastTripCard(fare), dailyCard(day), weeklyCard(week), tripBulletin(fare, trip: day.trips)])
        quest.done += 1
        if quest.done >= quest.target {
          var progress = questCard(quest)
          progress.shouldForceSwitchStatusMode = true
          try await publish(connection, incentivesTopic, [progress, questCompletion(quest)])
          quest = (quest.number + 1, 0, quest.target + 2)
        }
        try await publish(connection, incentivesTopic, [questCard(quest)])
      }
    }
  }

  private func publish(_ connection: RPCConnection, _ topic: String, _ cards: [TrackerCard]) async throws {
    _ = try await connection.unary(
      BrokerService.publishMethod, request: PublishRequest(topic: topic, changes: cards.map { CardChange(upserting: $0) }),
      response: PublishResponse.self)
  }

  private var nowSeconds: Int64 { nowMillis() / 1000 }

  /// A valid card of `type` living `lifetime` seconds, with the payload section `fill` sets.
  private func card(
    _ id: String, priority: Double, status: Double?, type: CardType, lifetime: Int64, _ fill: (inout TrackerCardPayload) -> Void
  ) -> TrackerCard {
    var card = TrackerCard(cardID: id, priority: priority, isValid: true)
    card.cardType = type
    card.statusModePriority = status
    card.expiresAt = nowSeconds + lifetime
    card.lastUpdatedAt = nowSeconds
    var payload = TrackerCardPayload()
    fill(&payload)
    card.payload = payload
    return card
  }

  private func dollars(_ cents: Int64) -> String { "$\(cents / 100).\(String(format: "%02d", cents % 100))" }

  private func money(_ cents: Int64) -> Money { Money(currencyCode: "USD", minorUnits: cents) }

  private func lastTripCard(_ fare: Int64) -> TrackerCard {
    var trip = TrackerRecentTripsCard(title: "Last trip")
    trip.formattedTotal = dollars(fare)
    trip.formattedRequestAt = TrackerView.clock(nowMillis())
    return card("earnings/last-trip", priority: 30, status: 5, type: .browse, lifetime: 7200) { $0.trackerRecentTripsCard = trip }
  }

  private func tripBulletin(_ fare: Int64, trip: Int) -> TrackerCard {
    var bulletin = TrackerRecentTripsCard(title: "Trip complete")
    bulletin.bulletinTitle = "Trip \(trip) complete"
    bulletin.formattedTotal = dollars(fare)
    return card("earnings/trip-bulletin", priority: 0, status: nil, type: .bulletin, lifetime: 60) { $0.trackerRecentTripsCard = bulletin }
  }

  private func dailyCard(_ day: (cents: Int64, trips: Int)) -> TrackerCard {
    var daily = TrackerDailyEarningsCard(title: "Today")
    daily.formattedTotal = dollars(day.cents)
    daily.total = money(day.cents)
    daily.tripCount = UInt32(day.trips)
    return card("earnings/today", priority: 20, status: 10, type: .browse, lifetime: 86_400) { $0.trackerDailyEarningsCard = daily }
  }

  private func weeklyCard(_ week: (cents: Int64, trips: Int)) -> TrackerCard {
    var weekly = TrackerWeeklyEarningsCard(title: "This week")
    weekly.formattedTotal = dollars(week.cents)
    weekly.total = money(week.cents)
    weekly.tripCount = UInt32(week.trips)
    return card("earnings/week", priority: 10, status: 1, type: .browse, lifetime: 86_400) { $0.trackerWeeklyEarningsCard = weekly }
  }

  private func questCard(_ quest: (number: Int, done: Int, target: Int)) -> TrackerCard {
    var progress = TrackerDxGyProgressCard(title: "Quest \(quest.number)")
    progress.questID = "quest-\(quest.number)"
    progress.completedTrips = UInt32(quest.done)
    progress.targetTrips = UInt32(quest.target)
    progress.reward = money(Int64(quest.target) * 250)
    progress.formattedReward = dollars(Int64(quest.target) * 250)
    progress.formattedDeadline = "ends 23:59"
    return card("incentives/quest", priority: 25, status: 8, type: .browse, lifetime: 86_400) { $0.trackerDxGyProgressCard = progress }
  }

  private func questCompletion(_ quest: (number: Int, done: Int, target: Int)) -> TrackerCard {
    var done = TrackerDxGyCompletionCard(title: "Quest complete")
    done.questID = "quest-\(quest.number)"
    done.bulletinTitle = "Quest \(quest.number) complete!"
    done.formattedReward = dollars(Int64(quest.target) * 250)
    done.completedTrips = UInt32(quest.done)
    return card("incentives/quest-complete", priority: 0, status: nil, type: .bulletin, lifetime: 600) {
      $0.trackerDxGyCompletionCard = done
    }
  }
}
