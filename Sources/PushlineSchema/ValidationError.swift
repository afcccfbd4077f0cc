public import PushlineWire

/// One failed validation (`pushline.onboarding.ValidationError`); a response carries all at once.
public struct ValidationError: ReflectableMessage {
  public static let protoName = "pushline.onboarding.ValidationError"

  /// The data type that failed. Required.
  public var dataType: DataType = .unknown { didSet { requiredFieldsSet |= 0b01 } }
  /// A stable machine-readable code, for example `otp_mismatch`. Required.
  public var code: String = "" { didSet { requiredFieldsSet |= 0b10 } }
  /// Text to show the user.
  public var message: String?
  /// The question whose answer failed.
  public var questionID: String?
  public var unknownFields = UnknownFields()

  var requiredFieldsSet: UInt8 = 0

  public init() {}

  /// A value with its required fields set.
  public init(dataType: DataType, code: String) {
    self.dataType = dataType
    self.code = code
    requiredFieldsSet = 0b11
  }

  public func encodedSize() -> Int {
    WireSize.field(dataType) &+ WireSize.field(code) &+ WireSize.field(message) &+ WireSize.field(questionID)
      &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x22, questionID)
    writer.write(0x1A, message)
    writer.write(0x12, code)
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
      case 0x12: code = try reader.readString()
      case 0x1A: message = try reader.readString()
      case 0x22: questionID = try reader.readString()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b01 == 0 { return "dataType" }
    if requiredFieldsSet & 0b10 == 0 { return "code" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .required(1, "dataType", \.dataType),
    .required(2, "code", \.code),
    .optional(3, "message", \.message),
    .optional(4, "questionID", \.questionID),
  ]
}
