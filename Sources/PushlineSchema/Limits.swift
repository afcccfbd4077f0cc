public import PushlineWire

/// The most a peer accepts (`pushline.rpc.Limits`); a connection uses the smaller of both
/// peers' values, and an absent value means the protocol default.
public struct Limits: ReflectableMessage {
  public static let protoName = "pushline.rpc.Limits"

  /// The largest frame payload, in bytes.
  public var maxFrameSize: UInt32?
  /// The largest message, in bytes, after decompression.
  public var maxMessageSize: UInt32?
  /// How many calls may be open at once.
  public var maxConcurrentCalls: UInt32?
  public var unknownFields = UnknownFields()

  public init() {}

  public func encodedSize() -> Int {
    WireSize.field(maxFrameSize) &+ WireSize.field(maxMessageSize) &+ WireSize.field(maxConcurrentCalls)
      &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x18, maxConcurrentCalls)
    writer.write(0x10, maxMessageSize)
    writer.write(0x08, maxFrameSize)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x08: maxFrameSize = try reader.readUInt32()
      case 0x10: maxMessageSize = try reader.readUInt32()
      case 0x18: maxConcurrentCalls = try reader.readUInt32()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .optional(1, "maxFrameSize", \.maxFrameSize),
    .optional(2, "maxMessageSize", \.maxMessageSize),
    .optional(3, "maxConcurrentCalls", \.maxConcurrentCalls),
  ]
}
