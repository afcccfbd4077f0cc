public import PushlineWire

/// Today's summary (`pushline.tracker.TrackerDailyEarningsCard`): total, trips, time online.
public struct TrackerDailyEarningsCard: ReflectableMessage {
  public static let protoName = "pushline.tracker.TrackerDailyEarningsCard"

  /// The card title. Required.
  public var title: String = "" { didSet { requiredFieldsSet |= 0b1 } }
  /// Today's total, formatted.
  public var formattedTotal: String?
  /// Today's total.
  public var total: Money?
  /// Trips completed today.
  public var tripCount: UInt32?
  /// Time online today, in seconds.
  public var onlineSeconds: UInt32?
  /// Time online, formatted.
  public var formattedOnlineTime: String?
  /// Start of the earnings day, seconds since the epoch.
  public var dayStartsAt: Int64?
  /// The action label.
  public var callToAction: String?
  public var unknownFields = UnknownFields()

  var requiredFieldsSet: UInt8 = 0

  public init() {}

  /// A value with its required fields set.
  public init(title: String) {
    self.title = title
    requiredFieldsSet = 0b1
  }

  public func encodedSize() -> Int {
    WireSize.field(title) &+ WireSize.field(formattedTotal) &+ WireSize.field(total)
      &+ WireSize.field(tripCount) &+ WireSize.field(onlineSeconds) &+ WireSize.field(formattedOnlineTime)
      &+ WireSize.field(dayStartsAt) &+ WireSize.field(callToAction) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x42, callToAction)
    writer.write(0x38, dayStartsAt)
    writer.write(0x32, formattedOnlineTime)
    writer.write(0x28, onlineSeconds)
    writer.write(0x20, tripCount)
    writer.write(0x1A, total)
    writer.write(0x12, formattedTotal)
    writer.write(0x0A, title)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x0A: title = try reader.readString()
      case 0x12: formattedTotal = try reader.readString()
      case 0x1A: try reader.readMessage(into: &total)
      case 0x20: tripCount = try reader.readUInt32()
      case 0x28: onlineSeconds = try reader.readUInt32()
      case 0x32: formattedOnlineTime = try reader.readString()
      case 0x38: dayStartsAt = try reader.readInt64()
      case 0x42: callToAction = try reader.readString()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b1 == 0 { return "title" }
    if let path = total?.missingRequiredField { return "total.\(path)" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .required(1, "title", \.title),
    .optional(2, "formattedTotal", \.formattedTotal),
    .optional(3, "total", \.total),
    .optional(4, "tripCount", \.tripCount),
    .optional(5, "onlineSeconds", \.onlineSeconds),
    .optional(6, "formattedOnlineTime", \.formattedOnlineTime),
    .optional(7, "dayStartsAt", \.dayStartsAt),
    .optional(8, "callToAction", \.callToAction),
  ]
}
