public import PushlineWire

/// One key–value pair of call or connection metadata (`pushline.rpc.MetadataEntry`).
public struct MetadataEntry: ReflectableMessage {
  public static let protoName = "pushline.rpc.MetadataEntry"

  /// The key, lowercase ASCII. Required.
  public var key: String = "" { didSet { requiredFieldsSet |= 0b1 } }
  /// The value.
  public var value: String?
  public var unknownFields = UnknownFields()

  var requiredFieldsSet: UInt8 = 0

  public init() {}

  /// A value with its required fields set.
  public init(key: String) {
    self.key = key
    requiredFieldsSet = 0b1
  }

  public func encodedSize() -> Int {
    WireSize.field(key) &+ WireSize.field(value) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x12, value)
    writer.write(0x0A, key)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x0A: key = try reader.readString()
      case 0x12: value = try reader.readString()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b1 == 0 { return "key" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .required(1, "key", \.key),
    .optional(2, "value", \.value),
  ]
}
