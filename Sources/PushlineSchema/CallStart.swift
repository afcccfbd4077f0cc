public import PushlineWire

/// Opens a call (`pushline.rpc.CallStart`): the method, its metadata and its deadline.
public struct CallStart: ReflectableMessage {
  public static let protoName = "pushline.rpc.CallStart"

  /// For example `/pushline.Tracker/Subscribe`. Required.
  public var method: String = "" { didSet { requiredFieldsSet |= 0b1 } }
  /// Call metadata.
  public var metadata: [MetadataEntry] = []
  /// The deadline as a timeout from when the frame is sent; absent means none.
  public var timeoutMillis: UInt32?
  public var unknownFields = UnknownFields()

  var requiredFieldsSet: UInt8 = 0

  public init() {}

  /// A value with its required fields set.
  public init(method: String) {
    self.method = method
    requiredFieldsSet = 0b1
  }

  public func encodedSize() -> Int {
    WireSize.field(method) &+ WireSize.field(metadata) &+ WireSize.field(timeoutMillis)
      &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x18, timeoutMillis)
    writer.write(0x12, metadata)
    writer.write(0x0A, method)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x0A: method = try reader.readString()
      case 0x12: try reader.readMessage(appendingTo: &metadata)
      case 0x18: timeoutMillis = try reader.readUInt32()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b1 == 0 { return "method" }
    if let path = metadata.firstMissingRequiredField { return "metadata\(path)" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .required(1, "method", \.method),
    .repeated(2, "metadata", \.metadata),
    .optional(3, "timeoutMillis", \.timeoutMillis),
  ]
}
