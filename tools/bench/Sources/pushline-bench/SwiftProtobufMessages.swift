import PushlineSchema
import SwiftProtobufPeer

/// swift-protobuf's messages built field by field from Pushline's values — never from
/// Pushline's bytes — so that the byte-equality check compares three independent encoders.
/// An optional Pushline field that is `nil` stays unset here.
extension Pushline_Tracker_TrackerCardBatch {
  init(_ batch: TrackerCardBatch) {
    self.init()
    cards = batch.cards.map(Pushline_Tracker_TrackerCard.init)
  }
}

extension Pushline_Tracker_TrackerCard {
  init(_ card: TrackerCard) {
    self.init()
    cardID = card.cardID
    priority = card.priority
    isValid = card.isValid
    if let value = card.payload { payload = Pushline_Tracker_TrackerCardPayload(value) }
    if let value = card.cardType { cardType = Pushline_Tracker_CardType(rawValue: Int(value.rawValue))! }
    if let value = card.expiresAt { expiresAt = value }
    if let value = card.lastUpdatedAt { lastUpdatedAt = value }
    if let value = card.outageState { outageState = Pushline_Tracker_OutageState(value) }
    if let value = card.shouldForceSwitchStatusMode { shouldForceSwitchStatusMode = value }
    if let value = card.statusModePriority { statusModePriority = value }
  }
}

extension Pushline_Tracker_TrackerCardPayload {
  init(_ payload: TrackerCardPayload) {
    self.init()
    if let value = payload.trackerRecentTripsCard { trackerRecentTripsCard = Pushline_Tracker_TrackerRecentTripsCard(value) }
    if let value = payload.trackerDailyEarningsCard { trackerDailyEarningsCard = Pushline_Tracker_TrackerDailyEarningsCard(value) }
    if let value = payload.trackerWeeklyEarningsCard { trackerWeeklyEarningsCard = Pushline_Tracker_TrackerWeeklyEarningsCard(value) }
    if let value = payload.trackerDxGyProgressCard { trackerDxGyProgressCard = Pushline_Tracker_TrackerDxGyProgressCard(value) }
    if let value = payload.trackerDxGyCompletionCard {
      trackerDxGyCompletionCard = Pushline_Tracker_TrackerDxGyCompletionCard(value)
    }
  }
}

extension Pushline_Tracker_TrackerRecentTripsCard {
  init(_ trips: TrackerRecentTripsCard) {
    self.init()
    title = trips.title
    if let value = trips.formattedTotal { formattedTotal = value }
    if let value = trips.formattedRequestAt { formattedRequestAt = value }
    if let value = trips.vehicleStatusDescription { vehicleStatusDescription = value }
    if let value = trips.callToAction { callToAction = value }
    if let value = trips.bulletinTitle { bulletinTitle = value }
    if let value = trips.lastTripUuid { lastTripUuid = value }
  }
}

extension Pushline_Tracker_Money {
  init(_ money: Money) {
    self.init()
    currencyCode = money.currencyCode
    minorUnits = money.minorUnits
  }
}

extension Pushline_Tracker_TrackerDailyEarningsCard {
  init(_ daily: TrackerDailyEarningsCard) {
    self.init()
    title = daily.title
    if let value = daily.formattedTotal { formattedTotal = value }
    if let value = daily.total { total = Pushline_Tracker_Money(value) }
    if let value = daily.tripCount { tripCount = value }
    if let value = daily.onlineSeconds { onlineSeconds = value }
    if let value = daily.formattedOnlineTime { formattedOnlineTime = value }
    if let value = daily.dayStartsAt { dayStartsAt = value }
    if let value = daily.callToAction { callToAction = value }
  }
}

extension Pushline_Tracker_TrackerWeeklyEarningsCard {
  init(_ weekly: TrackerWeeklyEarningsCard) {
    self.init()
    title = weekly.title
    if let value = weekly.formattedTotal { formattedTotal = value }
    if let value = weekly.total { total = Pushline_Tracker_Money(value) }
    if let value = weekly.tripCount { tripCount = value }
    if let value = weekly.onlineSeconds { onlineSeconds = value }
    if let value = weekly.weekStartsAt { weekStartsAt = value }
    if let value = weekly.weekEndsAt { weekEndsAt = value }
    dailyMinorUnits = weekly.dailyMinorUnits
    if let value = weekly.callToAction { callToAction = value }
  }
}

extension Pushline_Tracker_DxGyTier {
  init(_ tier: DxGyTier) {
    self.init()
    trips = tier.trips
    reward = Pushline_Tracker_Money(tier.reward)
    if let value = tier.formattedReward { formattedReward = value }
  }
}

extension Pushline_Tracker_TrackerDxGyProgressCard {
  init(_ quest: TrackerDxGyProgressCard) {
    self.init()
    title = quest.title
    if let value = quest.questID { questID = value }
    if let value = quest.completedTrips { completedTrips = value }
    if let value = quest.targetTrips { targetTrips = value }
    if let value = quest.reward { reward = Pushline_Tracker_Money(value) }
    if let value = quest.formattedReward { formattedReward = value }
    if let value = quest.startsAt { startsAt = value }
    if let value = quest.endsAt { endsAt = value }
    if let value = quest.formattedDeadline { formattedDeadline = value }
    if let value = quest.progress { progress = value }
    tiers = quest.tiers.map(Pushline_Tracker_DxGyTier.init)
  }
}

extension Pushline_Tracker_TrackerDxGyCompletionCard {
  init(_ done: TrackerDxGyCompletionCard) {
    self.init()
    title = done.title
    if let value = done.questID { questID = value }
    if let value = done.bulletinTitle { bulletinTitle = value }
    if let value = done.reward { reward = Pushline_Tracker_Money(value) }
    if let value = done.formattedReward { formattedReward = value }
    if let value = done.completedTrips { completedTrips = value }
    if let value = done.completedAt { completedAt = value }
  }
}

extension Pushline_Tracker_OutageState {
  init(_ outage: OutageState) {
    self.init()
    if let value = outage.isInOutage { isInOutage = value }
    if let value = outage.message { message = value }
    if let value = outage.since { since = value }
    if let value = outage.serviceName { serviceName = value }
  }
}
