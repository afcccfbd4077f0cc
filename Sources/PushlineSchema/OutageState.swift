public import PushlineWire

/// A backend service's outage as the cards that depend on it show it
/// (`pushline.tracker.OutageState`).
public struct OutageState: ReflectableMessage {
  public static let protoName = "pushline.tracker.OutageState"

  /// Whether the service is in outage now.
  public var isInOutage: Bool?
  /// What to tell the driver.
  public var message: String?
  /// When the outage began, seconds since the epoch.
  public var since: Int64?
  /// The service in outage.
  public var serviceName: String?
  public var unknownFields = UnknownFields()

  public init() {}

  public func encodedSize() -> Int {
    WireSize.field(isInOutage) &+ WireSize.field(message) &+ WireSize.field(since)
      &+ WireSize.field(serviceName) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x22, serviceName)
    writer.write(0x18, since)
    writer.write(0x12, message)
    writer.write(0x08, isInOutage)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x08: isInOutage = try reader.readBool()
      case 0x12: message = try reader.readString()
      case 0x18: since = try reader.readInt64()
      case 0x22: serviceName = try reader.readString()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .optional(1, "isInOutage", \.isInOutage),
    .optional(2, "message", \.message),
    .optional(3, "since", \.since),
    .optional(4, "serviceName", \.serviceName),
  ]
}
