public import PushlineWire

/// This week's summary (`pushline.tracker.TrackerWeeklyEarningsCard`), with one bar per day.
public struct TrackerWeeklyEarningsCard: ReflectableMessage {
  public static let protoName = "pushline.tracker.TrackerWeeklyEarningsCard"

  /// The card title. Required.
  public var title: String = "" { didSet { requiredFieldsSet |= 0b1 } }
  /// The week's total, formatted.
  public var formattedTotal: String?
  /// The week's total.
  public var total: Money?
  /// Trips completed this week.
  public var tripCount: UInt32?
  /// Time online this week, in seconds.
  public var onlineSeconds: UInt32?
  /// Start of the week, seconds since the epoch.
  public var weekStartsAt: Int64?
  /// End of the week, seconds since the epoch.
  public var weekEndsAt: Int64?
  /// Each day's total in minor units, oldest first (packed on the wire).
  public var dailyMinorUnits: [Int64] = []
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
      &+ WireSize.field(tripCount) &+ WireSize.field(onlineSeconds) &+ WireSize.field(weekStartsAt)
      &+ WireSize.field(weekEndsAt) &+ WireSize.packedZigZagField(dailyMinorUnits)
      &+ WireSize.field(callToAction) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x4A, callToAction)
    writer.writePackedZigZag(0x42, dailyMinorUnits)
    writer.write(0x38, weekEndsAt)
    writer.write(0x30, weekStartsAt)
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
      case 0x30: weekStartsAt = try reader.readInt64()
      case 0x38: weekEndsAt = try reader.readInt64()
      case 0x42: try reader.readPackedVarints { dailyMinorUnits.append(Varint.unZigZag($0)) }
      case 0x40: dailyMinorUnits.append(try reader.readSInt64())
      case 0x4A: callToAction = try reader.readString()
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
    .optional(6, "weekStartsAt", \.weekStartsAt),
    .optional(7, "weekEndsAt", \.weekEndsAt),
    .repeated(8, "dailyMinorUnits", \.dailyMinorUnits, as: .sint64),
    .optional(9, "callToAction", \.callToAction),
  ]
}
