public import PushlineWire

/// The answer of `/pushline.Health/Check` (`pushline.rpc.HealthCheckResponse`).
public struct HealthCheckResponse: ReflectableMessage {
  public static let protoName = "pushline.rpc.HealthCheckResponse"

  /// Whether the server or service is serving. Required.
  public var status: ServingStatus = .unknown { didSet { requiredFieldsSet |= 0b1 } }
  public var unknownFields = UnknownFields()

  var requiredFieldsSet: UInt8 = 0

  public init() {}

  /// A value with its required fields set.
  public init(status: ServingStatus) {
    self.status = status
    requiredFieldsSet = 0b1
  }

  public func encodedSize() -> Int {
    WireSize.field(status) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x08, status)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x08:
        if let value = try reader.readEnum(ServingStatus.self, fieldNumber: 1, unknownFields: &unknownFields) {
          status = value
        }
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b1 == 0 { return "status" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .required(1, "status", \.status),
  ]
}
