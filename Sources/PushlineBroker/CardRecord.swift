public import PushlineSchema

/// A topic's row for one card: its latest version, or a tombstone once removed, and the
/// offset of that last change.
public struct CardRecord: Hashable, Sendable {
  public var cardID: String
  /// The offset of the card's last change in its topic.
  public var offset: Int64
  /// The latest version; `nil` for a tombstone.
  public var card: EncodedCard?
  /// When the change was applied, in Unix milliseconds: tombstones age out by it.
  public var changedAtMillis: Int64

  /// A record.
  public init(cardID: String, offset: Int64, card: EncodedCard?, changedAtMillis: Int64) {
    self.cardID = cardID
    self.offset = offset
    self.card = card
    self.changedAtMillis = changedAtMillis
  }

  /// Whether this records a removal.
  public var isTombstone: Bool { card == nil }

  /// The change a subscriber receives for this record.
  public var change: EncodedCardChange {
    card.map { EncodedCardChange(upserting: $0, offset: offset) } ?? EncodedCardChange(removing: cardID, offset: offset)
  }
}
