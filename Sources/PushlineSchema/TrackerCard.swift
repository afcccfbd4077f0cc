public import PushlineWire

/// One card of the real-time earnings tracker (`pushline.tracker.TrackerCard`).
///
/// Field numbers are the seed's Thrift ids. Timestamps are seconds since the Unix epoch.
public struct TrackerCard: ReflectableMessage {
  public static let protoName = "pushline.tracker.TrackerCard"

  /// Identifies the card; upserts and removals address it. Required.
  public var cardID: String = "" { didSet { requiredFieldsSet |= 0b001 } }
  /// Browse-mode rank: higher first. Required.
  public var priority: Double = 0 { didSet { requiredFieldsSet |= 0b010 } }
  /// A card the service marks invalid is never shown. Required.
  public var isValid: Bool = false { didSet { requiredFieldsSet |= 0b100 } }
  /// The data the card renders.
  public var payload: TrackerCardPayload?
  /// Which mode shows the card; absent reads as ``CardType/unknown``.
  public var cardType: CardType?
  /// The second at which clients drop the card.
  public var expiresAt: Int64?
  /// When the service last populated the card; shown while the card is stale.
  public var lastUpdatedAt: Int64?
  /// The outage of the service behind the card, if any.
  public var outageState: OutageState?
  /// Switch the status mode to this card when it arrives.
  public var shouldForceSwitchStatusMode: Bool?
  /// Rank among status-mode candidates: higher wins.
  public var statusModePriority: Double?
  public var unknownFields = UnknownFields()

  var requiredFieldsSet: UInt8 = 0

  public init() {}

  /// A card with its three required fields set.
  public init(cardID: String, priority: Double, isValid: Bool) {
    self.cardID = cardID
    self.priority = priority
    self.isValid = isValid
    requiredFieldsSet = 0b111
  }

  public func encodedSize() -> Int {
    WireSize.field(cardID) &+ 9 &+ 2 &+ WireSize.field(payload) &+ WireSize.field(cardType)
      &+ WireSize.field(expiresAt) &+ WireSize.field(lastUpdatedAt) &+ WireSize.field(outageState)
      &+ WireSize.field(shouldForceSwitchStatusMode) &+ WireSize.field(statusModePriority)
      &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x51, statusModePriority)
    writer.write(0x48, shouldForceSwitchStatusMode)
    writer.write(0x42, outageState)
    writer.write(0x38, lastUpdatedAt)
    writer.write(0x30, expiresAt)
    writer.write(0x28, cardType)
    writer.write(0x22, payload)
    writer.write(0x18, isValid)
    writer.write(0x11, priority)
    writer.write(0x0A, cardID)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x0A: cardID = try reader.readString()
      case 0x11: priority = try reader.readDouble()
      case 0x18: isValid = try reader.readBool()
      case 0x22: try reader.readMessage(into: &payload)
      case 0x28:
        if let value = try reader.readEnum(CardType.self, fieldNumber: 5, unknownFields: &unknownFields) {
          cardType = value
        }
      case 0x30: expiresAt = try reader.readInt64()
      case 0x38: lastUpdatedAt = try reader.readInt64()
      case 0x42: try reader.readMessage(into: &outageState)
      case 0x48: shouldForceSwitchStatusMode = try reader.readBool()
      case 0x51: statusModePriority = try reader.readDouble()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b001 == 0 { return "cardID" }
    if requiredFieldsSet & 0b010 == 0 { return "priority" }
    if requiredFieldsSet & 0b100 == 0 { return "isValid" }
    if let path = payload?.missingRequiredField { return "payload.\(path)" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .required(1, "cardID", \.cardID),
    .required(2, "priority", \.priority),
    .required(3, "isValid", \.isValid),
    .optional(4, "payload", \.payload),
    .optional(5, "cardType", \.cardType),
    .optional(6, "expiresAt", \.expiresAt),
    .optional(7, "lastUpdatedAt", \.lastUpdatedAt),
    .optional(8, "outageState", \.outageState),
    .optional(9, "shouldForceSwitchStatusMode", \.shouldForceSwitchStatusMode),
    .optional(10, "statusModePriority", \.statusModePriority),
  ]
}
