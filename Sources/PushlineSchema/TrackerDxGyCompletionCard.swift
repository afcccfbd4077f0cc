public import PushlineWire

/// A completed quest (`pushline.tracker.TrackerDxGyCompletionCard`): the bulletin that celebrates it.
public struct TrackerDxGyCompletionCard: ReflectableMessage {
  public static let protoName = "pushline.tracker.TrackerDxGyCompletionCard"

  /// The card title. Required.
  public var title: String = "" { didSet { requiredFieldsSet |= 0b1 } }
  /// The quest.
  public var questID: String?
  /// The bulletin headline.
  public var bulletinTitle: String?
  /// The reward earned.
  public var reward: Money?
  /// The reward, formatted.
  public var formattedReward: String?
  /// Trips it took.
  public var completedTrips: UInt32?
  /// When it was completed, seconds since the epoch.
  public var completedAt: Int64?
  public var unknownFields = UnknownFields()

  var requiredFieldsSet: UInt8 = 0

  public init() {}

  /// A value with its required fields set.
  public init(title: String) {
    self.title = title
    requiredFieldsSet = 0b1
  }

  public func encodedSize() -> Int {
    WireSize.field(title) &+ WireSize.field(questID) &+ WireSize.field(bulletinTitle)
      &+ WireSize.field(reward) &+ WireSize.field(formattedReward) &+ WireSize.field(completedTrips)
      &+ WireSize.field(completedAt) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x38, completedAt)
    writer.write(0x30, completedTrips)
    writer.write(0x2A, formattedReward)
    writer.write(0x22, reward)
    writer.write(0x1A, bulletinTitle)
    writer.write(0x12, questID)
    writer.write(0x0A, title)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x0A: title = try reader.readString()
      case 0x12: questID = try reader.readString()
      case 0x1A: bulletinTitle = try reader.readString()
      case 0x22: try reader.readMessage(into: &reward)
      case 0x2A: formattedReward = try reader.readString()
      case 0x30: completedTrips = try reader.readUInt32()
      case 0x38: completedAt = try reader.readInt64()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b1 == 0 { return "title" }
    if let path = reward?.missingRequiredField { return "reward.\(path)" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .required(1, "title", \.title),
    .optional(2, "questID", \.questID),
    .optional(3, "bulletinTitle", \.bulletinTitle),
    .optional(4, "reward", \.reward),
    .optional(5, "formattedReward", \.formattedReward),
    .optional(6, "completedTrips", \.completedTrips),
    .optional(7, "completedAt", \.completedAt),
  ]
}
