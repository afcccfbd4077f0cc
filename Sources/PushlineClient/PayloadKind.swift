public import PushlineSchema

/// The kinds of card payload, one per section of `TrackerCardPayload`: each has a plugin.
public enum PayloadKind: String, CaseIterable, Hashable, Sendable {
  case recentTrips, dailyEarnings, weeklyEarnings, dxgyProgress, dxgyCompletion

  /// The kind of `payload`'s first set section; `nil` when none is set (or only sections
  /// this client does not know, kept as unknown fields).
  public init?(_ payload: TrackerCardPayload) {
    if payload.trackerRecentTripsCard != nil {
      self = .recentTrips
    } else if payload.trackerDailyEarningsCard != nil {
      self = .dailyEarnings
    } else if payload.trackerWeeklyEarningsCard != nil {
      self = .weeklyEarnings
    } else if payload.trackerDxGyProgressCard != nil {
      self = .dxgyProgress
    } else if payload.trackerDxGyCompletionCard != nil {
      self = .dxgyCompletion
    } else {
      return nil
    }
  }
}
