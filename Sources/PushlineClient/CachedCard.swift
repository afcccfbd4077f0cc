public import PushlineSchema

/// A card as the client keeps it: the broker's latest version, the topic and offset it came
/// with, and when it arrived (shown with `lastUpdatedAt` while the card is stale).
public struct CachedCard: Hashable, Sendable {
  public var topic: String
  public var card: TrackerCard
  /// The offset of the change that brought this version.
  public var offset: Int64
  /// When the client received it, in Unix milliseconds of the client's clock.
  public var receivedAtMillis: Int64

  /// A cached card.
  public init(topic: String, card: TrackerCard, offset: Int64, receivedAtMillis: Int64) {
    self.topic = topic
    self.card = card
    self.offset = offset
    self.receivedAtMillis = receivedAtMillis
  }
}
