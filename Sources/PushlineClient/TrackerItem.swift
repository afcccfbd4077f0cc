public import PushlineSchema

/// A card as the tracker's modes show it: validated, ranked, rendered by its plugin, with
/// what the driver must know about its freshness. An immutable value.
public struct TrackerItem: Hashable, Sendable {
  public var topic: String
  public var card: TrackerCard
  public var kind: PayloadKind
  /// The plugin's text, amounts hidden in privacy mode.
  public var text: String
  /// When the service last populated the card, in seconds (its `lastUpdatedAt`, or when the
  /// client received it).
  public var lastUpdatedAt: Int64
  /// Why the card may be out of date; `nil` while it is current.
  public var staleness: Staleness?
  /// When the broker last vouched for the card's topic, in Unix milliseconds by the client's
  /// clock (the broker's time less the clock correction), as every other time the tracker
  /// shows: a broker an hour behind does not make a card checked a second ago read as checked
  /// an hour ago.
  public var verifiedAtMillis: Int64?

  /// The card's id.
  public var cardID: String { card.cardID }
}

/// Why a card is shown as possibly out of date.
public enum Staleness: Hashable, Sendable {
  /// Its service reports an outage (the card's `outageState`).
  case serviceOutage(message: String?)
  /// The client has been offline since this time (Unix milliseconds).
  case offline(sinceMillis: Int64)
}
