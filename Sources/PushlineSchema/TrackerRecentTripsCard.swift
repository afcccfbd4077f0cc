public import PushlineWire

/// The last trip(s) (`pushline.tracker.TrackerRecentTripsCard`), exactly as the seed lists it.
public struct TrackerRecentTripsCard: ReflectableMessage {
  public static let protoName = "pushline.tracker.TrackerRecentTripsCard"

  /// The card title. Required.
  public var title: String = "" { didSet { requiredFieldsSet |= 0b1 } }
  /// The trip total, formatted for display.
  public var formattedTotal: String?
  /// When the trip was requested, formatted.
  public var formattedRequestAt: String?
  /// The vehicle status line.
  public var vehicleStatusDescription: String?
  /// The action label.
  public var callToAction: String?
  /// The title shown when the card is a bulletin.
  public var bulletinTitle: String?
  /// The trip the card describes.
  public var lastTripUuid: String?
  public var unknownFields = UnknownFields()

  var requiredFieldsSet: UInt8 = 0

  public init() {}

  /// A value with its required fields set.
  public init(title: String) {
    self.title = title
    requiredFieldsSet = 0b1
  }

  public func encodedSize() -> Int {
    WireSize.field(title) &+ WireSize.field(formattedTotal) &+ WireSize.field(formattedRequestAt)
      &+ WireSize.field(vehicleStatusDescription) &+ WireSize.field(callToAction)
      &+ WireSize.field(bulletinTitle) &+ WireSize.field(lastTripUuid) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x3A, lastTripUuid)
    writer.write(0x32, bulletinTitle)
    writer.write(0x2A, callToAction)
    writer.write(0x22, vehicleStatusDescription)
    writer.write(0x1A, formattedRequestAt)
    writer.write(0x12, formattedTotal)
    writer.write(0x0A, title)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x0A: title = try reader.readString()
      case 0x12: formattedTotal = try reader.readString()
      case 0x1A: formattedRequestAt = try reader.readString()
      case 0x22: vehicleStatusDescription = try reader.readString()
      case 0x2A: callToAction = try reader.readString()
      case 0x32: bulletinTitle = try reader.readString()
      case 0x3A: lastTripUuid = try reader.readString()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b1 == 0 { return "title" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .required(1, "title", \.title),
    .optional(2, "formattedTotal", \.formattedTotal),
    .optional(3, "formattedRequestAt", \.formattedRequestAt),
    .optional(4, "vehicleStatusDescription", \.vehicleStatusDescription),
    .optional(5, "callToAction", \.callToAction),
    .optional(6, "bulletinTitle", \.bulletinTitle),
    .optional(7, "lastTripUuid", \.lastTripUuid),
  ]
}
