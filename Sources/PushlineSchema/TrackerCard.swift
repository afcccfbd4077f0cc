public import PushlineWire

/// One card of the real-time earnings tracker (`pushline.tracker.TrackerCard`).
///
/// Field numbers are the seed's Thrift ids. Timestamps are seconds since the Unix epoch.
public struct TrackerCard: ReflectableMessage {
  public static let protoName = "pushline.tracker.TrackerCard"

  /// The card's fields, one reference shared by copies until one of them changes (copy on
  /// write). A card is copied at every step from publish to delivery — into records, changes,
  /// queues and updates — and a copy of ten fields with strings and a payload costs a retain
  /// per field, where a copy of one reference costs one.
  private var storage: Storage

  /// Identifies the card; upserts and removals address it. Required.
  public var cardID: String {
    get { storage.fields.cardID }
    set { uniqueStorage().fields.cardID = newValue }
  }
  /// Browse-mode rank: higher first. Required.
  public var priority: Double {
    get { storage.fields.priority }
    set { uniqueStorage().fields.priority = newValue }
  }
  /// A card the service marks invalid is never shown. Required.
  public var isValid: Bool {
    get { storage.fields.isValid }
    set { uniqueStorage().fields.isValid = newValue }
  }
  /// The data the card renders.
  public var payload: TrackerCardPayload? {
    get { storage.fields.payload }
    set { uniqueStorage().fields.payload = newValue }
  }
  /// Which mode shows the card; absent reads as ``CardType/unknown``.
  public var cardType: CardType? {
    get { storage.fields.cardType }
    set { uniqueStorage().fields.cardType = newValue }
  }
  /// The second at which clients drop the card.
  public var expiresAt: Int64? {
    get { storage.fields.expiresAt }
    set { uniqueStorage().fields.expiresAt = newValue }
  }
  /// When the service last populated the card; shown while the card is stale.
  public var lastUpdatedAt: Int64? {
    get { storage.fields.lastUpdatedAt }
    set { uniqueStorage().fields.lastUpdatedAt = newValue }
  }
  /// The outage of the service behind the card, if any.
  public var outageState: OutageState? {
    get { storage.fields.outageState }
    set { uniqueStorage().fields.outageState = newValue }
  }
  /// Switch the status mode to this card when it arrives.
  public var shouldForceSwitchStatusMode: Bool? {
    get { storage.fields.shouldForceSwitchStatusMode }
    set { uniqueStorage().fields.shouldForceSwitchStatusMode = newValue }
  }
  /// Rank among status-mode candidates: higher wins.
  public var statusModePriority: Double? {
    get { storage.fields.statusModePriority }
    set { uniqueStorage().fields.statusModePriority = newValue }
  }
  public var unknownFields: UnknownFields {
    get { storage.fields.unknownFields }
    set { uniqueStorage().fields.unknownFields = newValue }
  }

  public init() {
    storage = Storage(Fields())
  }

  /// A card with its three required fields set.
  public init(cardID: String, priority: Double, isValid: Bool) {
    self.init()
    self.cardID = cardID
    self.priority = priority
    self.isValid = isValid
  }

  public func encodedSize() -> Int { storage.fields.encodedSize() }

  public func encode(to writer: inout WireWriter) { storage.fields.encode(to: &writer) }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    try uniqueStorage().fields.decodeFields(from: &reader)
  }

  public var missingRequiredField: String? { storage.fields.missingRequiredField }

  public static func == (lhs: Self, rhs: Self) -> Bool {
    lhs.storage === rhs.storage || lhs.storage.fields == rhs.storage.fields
  }

  public func hash(into hasher: inout Hasher) { storage.fields.hash(into: &hasher) }

  /// The storage, copied first when another card shares it.
  private mutating func uniqueStorage() -> Storage {
    if !isKnownUniquelyReferenced(&storage) { storage = Storage(storage.fields) }
    return storage
  }

  /// The box the fields live in. Only a card that holds the sole reference writes to it
  /// (``uniqueStorage()``), so sharing it across threads is as safe as sharing a value.
  private final class Storage: @unchecked Sendable {
    var fields: Fields
    init(_ fields: Fields) { self.fields = fields }
  }

  /// The fields, with their wire format and required-field tracking; the public properties
  /// above say what each means.
  struct Fields: Hashable, Sendable {
    var cardID: String = "" { didSet { requiredFieldsSet |= 0b001 } }
    var priority: Double = 0 { didSet { requiredFieldsSet |= 0b010 } }
    var isValid: Bool = false { didSet { requiredFieldsSet |= 0b100 } }
    var payload: TrackerCardPayload?
    var cardType: CardType?
    var expiresAt: Int64?
    var lastUpdatedAt: Int64?
    var outageState: OutageState?
    var shouldForceSwitchStatusMode: Bool?
    var statusModePriority: Double?
    var unknownFields = UnknownFields()

    var requiredFieldsSet: UInt8 = 0

    func encodedSize() -> Int {
      WireSize.field(cardID) &+ 9 &+ 2 &+ WireSize.field(payload) &+ WireSize.field(cardType)
        &+ WireSize.field(expiresAt) &+ WireSize.field(lastUpdatedAt) &+ WireSize.field(outageState)
        &+ WireSize.field(shouldForceSwitchStatusMode) &+ WireSize.field(statusModePriority)
        &+ unknownFields.encodedSize
    }

    func encode(to writer: inout WireWriter) {
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

    mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
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

    var missingRequiredField: String? {
      if requiredFieldsSet & 0b001 == 0 { return "cardID" }
      if requiredFieldsSet & 0b010 == 0 { return "priority" }
      if requiredFieldsSet & 0b100 == 0 { return "isValid" }
      if let path = payload?.missingRequiredField { return "payload.\(path)" }
      return nil
    }
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
