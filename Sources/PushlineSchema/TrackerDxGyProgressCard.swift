public import PushlineWire

/// A quest in progress (`pushline.tracker.TrackerDxGyProgressCard`): trips done toward the
/// target, the reward, the deadline.
public struct TrackerDxGyProgressCard: ReflectableMessage {
  public static let protoName = "pushline.tracker.TrackerDxGyProgressCard"

  /// The card title. Required.
  public var title: String = "" { didSet { requiredFieldsSet |= 0b1 } }
  /// The quest.
  public var questID: String?
  /// Trips done so far.
  public var completedTrips: UInt32?
  /// Trips needed for the current tier (the X).
  public var targetTrips: UInt32?
  /// The reward of the current tier (the Y).
  public var reward: Money?
  /// The reward, formatted.
  public var formattedReward: String?
  /// When the quest opens, seconds since the epoch.
  public var startsAt: Int64?
  /// The deadline, seconds since the epoch.
  public var endsAt: Int64?
  /// The deadline, formatted.
  public var formattedDeadline: String?
  /// completedTrips / targetTrips, for the progress bar.
  public var progress: Float?
  /// Every tier of the quest.
  public var tiers: [DxGyTier] = []
  public var unknownFields = UnknownFields()

  var requiredFieldsSet: UInt8 = 0

  public init() {}

  /// A value with its required fields set.
  public init(title: String) {
    self.title = title
    requiredFieldsSet = 0b1
  }

  public func encodedSize() -> Int {
    WireSize.field(title) &+ WireSize.field(questID) &+ WireSize.field(completedTrips)
      &+ WireSize.field(targetTrips) &+ WireSize.field(reward) &+ WireSize.field(formattedReward)
      &+ WireSize.field(startsAt) &+ WireSize.field(endsAt) &+ WireSize.field(formattedDeadline)
      &+ WireSize.field(progress) &+ WireSize.field(tiers) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x5A, tiers)
    writer.write(0x55, progress)
    writer.write(0x4A, formattedDeadline)
    writer.write(0x40, endsAt)
    writer.write(0x38, startsAt)
    writer.write(0x32, formattedReward)
    writer.write(0x2A, reward)
    writer.write(0x20, targetTrips)
    writer.write(0x18, completedTrips)
    writer.write(0x12, questID)
    writer.write(0x0A, title)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x0A: title = try reader.readString()
      case 0x12: questID = try reader.readString()
      case 0x18: completedTrips = try reader.readUInt32()
      case 0x20: targetTrips = try reader.readUInt32()
      case 0x2A: try reader.readMessage(into: &reward)
      case 0x32: formattedReward = try reader.readString()
      case 0x38: startsAt = try reader.readInt64()
      case 0x40: endsAt = try reader.readInt64()
      case 0x4A: formattedDeadline = try reader.readString()
      case 0x55: progress = try reader.readFloat()
      case 0x5A: try reader.readMessage(appendingTo: &tiers)
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b1 == 0 { return "title" }
    if let path = reward?.missingRequiredField { return "reward.\(path)" }
    if let path = tiers.firstMissingRequiredField { return "tiers\(path)" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .required(1, "title", \.title),
    .optional(2, "questID", \.questID),
    .optional(3, "completedTrips", \.completedTrips),
    .optional(4, "targetTrips", \.targetTrips),
    .optional(5, "reward", \.reward),
    .optional(6, "formattedReward", \.formattedReward),
    .optional(7, "startsAt", \.startsAt),
    .optional(8, "endsAt", \.endsAt),
    .optional(9, "formattedDeadline", \.formattedDeadline),
    .optional(10, "progress", \.progress),
    .repeated(11, "tiers", \.tiers),
  ]
}
