public import PushlineWire

/// The sender accepts no new calls (`pushline.rpc.GoAway`); calls up to `lastCallID` may complete.
public struct GoAway: ReflectableMessage {
  public static let protoName = "pushline.rpc.GoAway"

  /// The highest call id the sender will still serve. Required.
  public var lastCallID: UInt32 = 0 { didSet { requiredFieldsSet |= 0b1 } }
  /// A gRPC status code saying why: UNAVAILABLE for a shutdown.
  public var code: UInt32?
  /// Why, for people.
  public var message: String?
  /// When to reconnect.
  public var retryAfterMillis: UInt32?
  public var unknownFields = UnknownFields()

  var requiredFieldsSet: UInt8 = 0

  public init() {}

  /// A value with its required fields set.
  public init(lastCallID: UInt32) {
    self.lastCallID = lastCallID
    requiredFieldsSet = 0b1
  }

  public func encodedSize() -> Int {
    WireSize.field(lastCallID) &+ WireSize.field(code) &+ WireSize.field(message)
      &+ WireSize.field(retryAfterMillis) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x20, retryAfterMillis)
    writer.write(0x1A, message)
    writer.write(0x10, code)
    writer.write(0x08, lastCallID)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x08: lastCallID = try reader.readUInt32()
      case 0x10: code = try reader.readUInt32()
      case 0x1A: message = try reader.readString()
      case 0x20: retryAfterMillis = try reader.readUInt32()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b1 == 0 { return "lastCallID" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .required(1, "lastCallID", \.lastCallID),
    .optional(2, "code", \.code),
    .optional(3, "message", \.message),
    .optional(4, "retryAfterMillis", \.retryAfterMillis),
  ]
}
