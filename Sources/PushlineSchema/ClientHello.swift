public import PushlineWire

/// The client's handshake (`pushline.rpc.ClientHello`): what it speaks, what it accepts, who it is.
public struct ClientHello: ReflectableMessage {
  public static let protoName = "pushline.rpc.ClientHello"

  /// The lowest protocol version the client speaks. Required.
  public var minVersion: UInt32 = 0 { didSet { requiredFieldsSet |= 0b01 } }
  /// The highest protocol version the client speaks. Required.
  public var maxVersion: UInt32 = 0 { didSet { requiredFieldsSet |= 0b10 } }
  /// Compressions the client can decode, in order of preference (packed on the wire).
  public var compressions: [Compression] = []
  /// The client's limits.
  public var limits: Limits?
  /// A bearer token; handlers see it in the call context.
  public var authToken: String?
  /// Connection metadata.
  public var metadata: [MetadataEntry] = []
  /// The client library and version.
  public var userAgent: String?
  public var unknownFields = UnknownFields()

  var requiredFieldsSet: UInt8 = 0

  public init() {}

  /// A value with its required fields set.
  public init(minVersion: UInt32, maxVersion: UInt32) {
    self.minVersion = minVersion
    self.maxVersion = maxVersion
    requiredFieldsSet = 0b11
  }

  public func encodedSize() -> Int {
    WireSize.field(minVersion) &+ WireSize.field(maxVersion) &+ WireSize.packedField(compressions)
      &+ WireSize.field(limits) &+ WireSize.field(authToken) &+ WireSize.field(metadata)
      &+ WireSize.field(userAgent) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x3A, userAgent)
    writer.write(0x32, metadata)
    writer.write(0x2A, authToken)
    writer.write(0x22, limits)
    writer.writePacked(0x1A, compressions)
    writer.write(0x10, maxVersion)
    writer.write(0x08, minVersion)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x08: minVersion = try reader.readUInt32()
      case 0x10: maxVersion = try reader.readUInt32()
      case 0x1A:
        try reader.readEnums(appendingTo: &compressions, packed: true, fieldNumber: 3, unknownFields: &unknownFields)
      case 0x18:
        try reader.readEnums(appendingTo: &compressions, packed: false, fieldNumber: 3, unknownFields: &unknownFields)
      case 0x22: try reader.readMessage(into: &limits)
      case 0x2A: authToken = try reader.readString()
      case 0x32: try reader.readMessage(appendingTo: &metadata)
      case 0x3A: userAgent = try reader.readString()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b01 == 0 { return "minVersion" }
    if requiredFieldsSet & 0b10 == 0 { return "maxVersion" }
    if let path = limits?.missingRequiredField { return "limits.\(path)" }
    if let path = metadata.firstMissingRequiredField { return "metadata\(path)" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .required(1, "minVersion", \.minVersion),
    .required(2, "maxVersion", \.maxVersion),
    .repeated(3, "compressions", \.compressions),
    .optional(4, "limits", \.limits),
    .optional(5, "authToken", \.authToken),
    .repeated(6, "metadata", \.metadata),
    .optional(7, "userAgent", \.userAgent),
  ]
}
