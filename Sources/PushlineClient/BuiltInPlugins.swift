import PushlineSchema

/// The plugins for the five payload kinds of the schema.
public enum BuiltInPlugins {
  /// All of them.
  public static let all: [any CardPlugin] = [
    RecentTripsPlugin(), DailyEarningsPlugin(), WeeklyEarningsPlugin(), DxGyProgressPlugin(), DxGyCompletionPlugin(),
  ]
}

/// Amounts in text: hidden in privacy mode, absent when the card has none.
func amount(_ formatted: String?, privacy: Bool) -> String {
  guard let formatted else { return "" }
  return privacy ? hiddenAmount : formatted
}

/// Joins the non-empty parts with " · ".
func line(_ parts: String?...) -> String {
  parts.compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: " · ")
}

/// The last trip: its total and when it was requested.
struct RecentTripsPlugin: CardPlugin {
  let kind = PayloadKind.recentTrips
  func isShowable(_ card: TrackerCard) -> Bool { card.payload?.trackerRecentTripsCard != nil }
  func browseText(_ card: TrackerCard, privacy: Bool) -> String {
    guard let trip = card.payload?.trackerRecentTripsCard else { return "" }
    return line(trip.title, amount(trip.formattedTotal, privacy: privacy), trip.formattedRequestAt)
  }
  func bulletinText(_ card: TrackerCard, privacy: Bool) -> String {
    guard let trip = card.payload?.trackerRecentTripsCard else { return "" }
    return line(trip.bulletinTitle ?? trip.title, amount(trip.formattedTotal, privacy: privacy))
  }
}

/// Today's earnings, trips and time online.
struct DailyEarningsPlugin: CardPlugin {
  let kind = PayloadKind.dailyEarnings
  func isShowable(_ card: TrackerCard) -> Bool { card.payload?.trackerDailyEarningsCard != nil }
  func browseText(_ card: TrackerCard, privacy: Bool) -> String {
    guard let day = card.payload?.trackerDailyEarningsCard else { return "" }
    return line(day.title, amount(day.formattedTotal, privacy: privacy), day.tripCount.map { "\($0) trips" }, day.formattedOnlineTime)
  }
  func bulletinText(_ card: TrackerCard, privacy: Bool) -> String { browseText(card, privacy: privacy) }
}

/// The week's earnings and trips.
struct WeeklyEarningsPlugin: CardPlugin {
  let kind = PayloadKind.weeklyEarnings
  func isShowable(_ card: TrackerCard) -> Bool { card.payload?.trackerWeeklyEarningsCard != nil }
  func browseText(_ card: TrackerCard, privacy: Bool) -> String {
    guard let week = card.payload?.trackerWeeklyEarningsCard else { return "" }
    return line(week.title, amount(week.formattedTotal, privacy: privacy), week.tripCount.map { "\($0) trips" })
  }
  func bulletinText(_ card: TrackerCard, privacy: Bool) -> String { browseText(card, privacy: privacy) }
}

/// A quest in progress: trips done of the target, the reward, the deadline.
struct DxGyProgressPlugin: CardPlugin {
  let kind = PayloadKind.dxgyProgress
  func isShowable(_ card: TrackerCard) -> Bool {
    guard let quest = card.payload?.trackerDxGyProgressCard else { return false }
    return quest.targetTrips.map { $0 > 0 } ?? true
  }
  func browseText(_ card: TrackerCard, privacy: Bool) -> String {
    guard let quest = card.payload?.trackerDxGyProgressCard else { return "" }
    let progress = quest.targetTrips.map { "\(quest.completedTrips ?? 0)/\($0) trips" }
    return line(quest.title, progress, amount(quest.formattedReward, privacy: privacy), quest.formattedDeadline)
  }
  func bulletinText(_ card: TrackerCard, privacy: Bool) -> String { browseText(card, privacy: privacy) }
}

/// A completed quest: a bulletin.
struct DxGyCompletionPlugin: CardPlugin {
  let kind = PayloadKind.dxgyCompletion
  func isShowable(_ card: TrackerCard) -> Bool { card.payload?.trackerDxGyCompletionCard != nil }
  func browseText(_ card: TrackerCard, privacy: Bool) -> String {
    guard let done = card.payload?.trackerDxGyCompletionCard else { return "" }
    return line(done.title, amount(done.formattedReward, privacy: privacy))
  }
  func bulletinText(_ card: TrackerCard, privacy: Bool) -> String {
    guard let done = card.payload?.trackerDxGyCompletionCard else { return "" }
    return line(done.bulletinTitle ?? done.title, amount(done.formattedReward, privacy: privacy))
  }
}
