public import PushlineWire

/// The request of `/pushline.Health/Check` (`pushline.rpc.HealthCheckRequest`).
public struct HealthCheckRequest: ReflectableMessage {
  public static let protoName = "pushline.rpc.HealthCheckRequest"

  /// The service asked about; empty or absent: the server as a whole.
  public var service: String?
  public var unknownFields = UnknownFields()

  public init() {}

  public func encodedSize() -> Int {
    WireSize.field(service) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x0A, service)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x0A: service = try reader.readString()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .optional(1, "service", \.service),
  ]
}
