public import PushlineWire

/// One step of a "do X trips, get Y" quest (`pushline.tracker.DxGyTier`).
public struct DxGyTier: ReflectableMessage {
  public static let protoName = "pushline.tracker.DxGyTier"

  /// Trips needed to reach the tier. Required.
  public var trips: UInt32 = 0 { didSet { requiredFieldsSet |= 0b01 } }
  /// The reward for reaching it. Required.
  public var reward: Money = Money() { didSet { requiredFieldsSet |= 0b10 } }
  /// The reward, formatted.
  public var formattedReward: String?
  public var unknownFields = UnknownFields()

  var requiredFieldsSet: UInt8 = 0

  public init() {}

  /// A value with its required fields set.
  public init(trips: UInt32, reward: Money) {
    self.trips = trips
    self.reward = reward
    requiredFieldsSet = 0b11
  }

  public func encodedSize() -> Int {
    WireSize.field(trips) &+ WireSize.field(reward) &+ WireSize.field(formattedReward)
      &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x1A, formattedReward)
    writer.write(0x12, reward)
    writer.write(0x08, trips)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x08: trips = try reader.readUInt32()
      case 0x12: try reader.readMessage(into: &reward)
      case 0x1A: formattedReward = try reader.readString()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b01 == 0 { return "trips" }
    if requiredFieldsSet & 0b10 == 0 { return "reward" }
    if let path = reward.missingRequiredField { return "reward.\(path)" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .required(1, "trips", \.trips),
    .required(2, "reward", \.reward),
    .optional(3, "formattedReward", \.formattedReward),
  ]
}
