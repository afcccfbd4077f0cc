public import PushlineWire

/// One change to one card of a topic (`pushline.broker.CardChange`), with its card decoded:
/// what clients read.
public typealias CardChange = CardChangeMessage<TrackerCard>

/// One change to one card of a topic (`pushline.broker.CardChange`): an upsert carries the
/// card's new version, a removal carries none. `Card` is how the message holds the card: see
/// ``CardRepresentation``.
public struct CardChangeMessage<Card: CardRepresentation>: WireMessage {
  public static var protoName: String { "pushline.broker.CardChange" }

  /// The card the change is about. Required.
  public var cardID: String = "" { didSet { requiredFieldsSet |= 0b1 } }
  /// The card's new version; `nil` for a removal.
  public var card: Card?
  /// The change's offset in its topic, assigned by the broker; ignored in a publish.
  public var offset: Int64?
  public var unknownFields = UnknownFields()

  @usableFromInline var requiredFieldsSet: UInt8 = 0

  @inlinable
  public init() {}

  /// A value with its required fields set.
  @inlinable
  public init(cardID: String) {
    self.cardID = cardID
    requiredFieldsSet = 0b1
  }

  /// An upsert of `card`.
  @inlinable
  public init(upserting card: Card, offset: Int64? = nil) {
    self.init(cardID: card.cardID)
    self.card = card
    self.offset = offset
  }

  /// The removal of the card `cardID`.
  @inlinable
  public init(removing cardID: String, offset: Int64? = nil) {
    self.init(cardID: cardID)
    self.offset = offset
  }

  @inlinable
  public func encodedSize() -> Int {
    WireSize.field(cardID) &+ WireSize.field(card) &+ WireSize.field(offset) &+ unknownFields.encodedSize
  }

  @inlinable
  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x18, offset)
    writer.write(0x12, card)
    writer.write(0x0A, cardID)
  }

  @inlinable
  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x0A: cardID = try reader.readString()
      case 0x12: try reader.readMessage(into: &card)
      case 0x18: offset = try reader.readInt64()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  @inlinable
  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b1 == 0 { return "cardID" }
    if let path = card?.missingRequiredField { return "card.\(path)" }
    return nil
  }
}

extension CardChangeMessage: FieldRepresentable, ReflectableMessage where Card == TrackerCard {
  public static var fields: [FieldDescriptor<Self>] {
    [
      .required(1, "cardID", \.cardID),
      .optional(2, "card", \.card),
      .optional(3, "offset", \.offset),
    ]
  }
}
