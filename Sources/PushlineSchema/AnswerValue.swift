public import PushlineWire

/// One collected value (`pushline.onboarding.AnswerValue`).
public struct AnswerValue: ReflectableMessage {
  public static let protoName = "pushline.onboarding.AnswerValue"

  /// What the value is. Required.
  public var dataType: DataType = .unknown { didSet { requiredFieldsSet |= 0b1 } }
  /// A textual value: a phone number, a code, a name.
  public var text: String?
  /// A binary value: a photo.
  public var blob: [UInt8]?
  public var unknownFields = UnknownFields()

  var requiredFieldsSet: UInt8 = 0

  public init() {}

  /// A value with its required fields set.
  public init(dataType: DataType) {
    self.dataType = dataType
    requiredFieldsSet = 0b1
  }

  public func encodedSize() -> Int {
    WireSize.field(dataType) &+ WireSize.field(text) &+ WireSize.field(blob) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x1A, blob)
    writer.write(0x12, text)
    writer.write(0x08, dataType)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x08:
        if let value = try reader.readEnum(DataType.self, fieldNumber: 1, unknownFields: &unknownFields) {
          dataType = value
        }
      case 0x12: text = try reader.readString()
      case 0x1A: blob = try reader.readBytes()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b1 == 0 { return "dataType" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .required(1, "dataType", \.dataType),
    .optional(2, "text", \.text),
    .optional(3, "blob", \.blob),
  ]
}
