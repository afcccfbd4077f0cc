import PushlineWire

/// Every message of the schema, looked up by proto name — how `pushline dump --type` and
/// `encode --type` find the type to use.
public enum MessageRegistry {
  /// All message types: tracker, onboarding, the RPC envelope, then the broker's services.
  public static let all: [any ReflectableMessage.Type] = [
    TrackerCard.self, TrackerCardPayload.self, TrackerRecentTripsCard.self, Money.self,
    TrackerDailyEarningsCard.self, TrackerWeeklyEarningsCard.self, DxGyTier.self,
    TrackerDxGyProgressCard.self, TrackerDxGyCompletionCard.self, OutageState.self,
    TrackerCardBatch.self,
    Question.self, AnswerValue.self, Answer.self, AnswerBatch.self, ValidationError.self,
    Session.self, AnswerResponse.self,
    MetadataEntry.self, Limits.self, ClientHello.self, ServerHello.self, CallStart.self, CallStatus.self,
    GoAway.self, HealthCheckRequest.self, HealthCheckResponse.self,
    CardChange.self, PublishRequest.self, PublishResponse.self, PublishOutcome.self, TopicPosition.self,
    SubscribeRequest.self,
    TopicUpdate.self, GetCardsRequest.self,
  ]

  /// The type whose proto name is `name` (a leading `.` is ignored), or `nil`.
  public static func messageType(named name: String) -> (any ReflectableMessage.Type)? {
    let name = name.hasPrefix(".") ? String(name.dropFirst()) : name
    return all.first { $0.protoName == name }
  }
}
