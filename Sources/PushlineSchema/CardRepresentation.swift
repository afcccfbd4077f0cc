public import PushlineWire

/// How a message holds the tracker cards it carries: decoded, as a ``TrackerCard`` (what
/// clients read), or as its checked encoding, an ``EncodedCard`` (what a broker stores and
/// forwards). Both have the same wire form, so one message type serves both.
public protocol CardRepresentation: WireMessage {
  /// The card's identifier.
  var cardID: String { get }
  /// The second at which clients drop the card.
  var expiresAt: Int64? { get }
}

extension TrackerCard: CardRepresentation {}
