public import PushlineWire

/// The server's handshake answer (`pushline.rpc.ServerHello`): the version and compression
/// chosen, its limits, its clock.
public struct ServerHello: ReflectableMessage {
  public static let protoName = "pushline.rpc.ServerHello"

  /// The protocol version of the connection. Required.
  public var version: UInt32 = 0 { didSet { requiredFieldsSet |= 0b1 } }
  /// The compression the server will use for large messages.
  public var compression: Compression?
  /// The server's limits.
  public var limits: Limits?
  /// Server time in milliseconds since the Unix epoch, to correct clock skew.
  public var serverTimeMillis: Int64?
  /// How often an otherwise idle client should ping, in milliseconds.
  public var keepaliveIntervalMillis: UInt32?
  public var unknownFields = UnknownFields()

  var requiredFieldsSet: UInt8 = 0

  public init() {}

  /// A value with its required fields set.
  public init(version: UInt32) {
    self.version = version
    requiredFieldsSet = 0b1
  }

  public func encodedSize() -> Int {
    WireSize.field(version) &+ WireSize.field(compression) &+ WireSize.field(limits)
      &+ WireSize.field(serverTimeMillis) &+ WireSize.field(keepaliveIntervalMillis)
      &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x28, keepaliveIntervalMillis)
    writer.write(0x20, serverTimeMillis)
    writer.write(0x1A, limits)
    writer.write(0x10, compression)
    writer.write(0x08, version)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x08: version = try reader.readUInt32()
      case 0x10:
        if let value = try reader.readEnum(Compression.self, fieldNumber: 2, unknownFields: &unknownFields) {
          compression = value
        }
      case 0x1A: try reader.readMessage(into: &limits)
      case 0x20: serverTimeMillis = try reader.readInt64()
      case 0x28: keepaliveIntervalMillis = try reader.readUInt32()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b1 == 0 { return "version" }
    if let path = limits?.missingRequiredField { return "limits.\(path)" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .required(1, "version", \.version),
    .optional(2, "compression", \.compression),
    .optional(3, "limits", \.limits),
    .optional(4, "serverTimeMillis", \.serverTimeMillis),
    .optional(5, "keepaliveIntervalMillis", \.keepaliveIntervalMillis),
  ]
}
