public import PushlineWire

/// Ends a call (`pushline.rpc.CallStatus`): a gRPC status code, a message, trailing metadata.
public struct CallStatus: ReflectableMessage {
  public static let protoName = "pushline.rpc.CallStatus"

  /// The gRPC status code. Required.
  public var code: UInt32 = 0 { didSet { requiredFieldsSet |= 0b1 } }
  /// What happened, for people.
  public var message: String?
  /// Trailing metadata.
  public var metadata: [MetadataEntry] = []
  /// For retryable statuses: when to try again.
  public var retryAfterMillis: UInt32?
  public var unknownFields = UnknownFields()

  var requiredFieldsSet: UInt8 = 0

  public init() {}

  /// A value with its required fields set.
  public init(code: UInt32) {
    self.code = code
    requiredFieldsSet = 0b1
  }

  public func encodedSize() -> Int {
    WireSize.field(code) &+ WireSize.field(message) &+ WireSize.field(metadata)
      &+ WireSize.field(retryAfterMillis) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x20, retryAfterMillis)
    writer.write(0x1A, metadata)
    writer.write(0x12, message)
    writer.write(0x08, code)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x08: code = try reader.readUInt32()
      case 0x12: message = try reader.readString()
      case 0x1A: try reader.readMessage(appendingTo: &metadata)
      case 0x20: retryAfterMillis = try reader.readUInt32()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b1 == 0 { return "code" }
    if let path = metadata.firstMissingRequiredField { return "metadata\(path)" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .required(1, "code", \.code),
    .optional(2, "message", \.message),
    .repeated(3, "metadata", \.metadata),
    .optional(4, "retryAfterMillis", \.retryAfterMillis),
  ]
}
