public import PushlineWire

/// Several cards in one message (`pushline.tracker.TrackerCardBatch`): a snapshot, a publish batch.
public struct TrackerCardBatch: ReflectableMessage {
  public static let protoName = "pushline.tracker.TrackerCardBatch"

  /// The cards, in order.
  public var cards: [TrackerCard] = []
  public var unknownFields = UnknownFields()

  public init() {}

  /// A batch of `cards`.
  public init(cards: [TrackerCard]) {
    self.cards = cards
  }

  public func encodedSize() -> Int {
    WireSize.field(cards) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x0A, cards)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x0A: try reader.readMessage(appendingTo: &cards)
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if let path = cards.firstMissingRequiredField { return "cards\(path)" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .repeated(1, "cards", \.cards),
  ]
}
