public import PushlineWire

/// The answer to one question (`pushline.onboarding.Answer`).
public struct Answer: ReflectableMessage {
  public static let protoName = "pushline.onboarding.Answer"

  /// The question answered. Required.
  public var questionID: String = "" { didSet { requiredFieldsSet |= 0b01 } }
  /// The flow the question belongs to. Required.
  public var flowID: String = "" { didSet { requiredFieldsSet |= 0b10 } }
  /// One value per requested data type.
  public var values: [AnswerValue] = []
  /// Client time the answer was completed, seconds since the epoch.
  public var answeredAt: Int64?
  public var unknownFields = UnknownFields()

  var requiredFieldsSet: UInt8 = 0

  public init() {}

  /// A value with its required fields set.
  public init(questionID: String, flowID: String) {
    self.questionID = questionID
    self.flowID = flowID
    requiredFieldsSet = 0b11
  }

  public func encodedSize() -> Int {
    WireSize.field(questionID) &+ WireSize.field(flowID) &+ WireSize.field(values)
      &+ WireSize.field(answeredAt) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x20, answeredAt)
    writer.write(0x1A, values)
    writer.write(0x12, flowID)
    writer.write(0x0A, questionID)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x0A: questionID = try reader.readString()
      case 0x12: flowID = try reader.readString()
      case 0x1A: try reader.readMessage(appendingTo: &values)
      case 0x20: answeredAt = try reader.readInt64()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b01 == 0 { return "questionID" }
    if requiredFieldsSet & 0b10 == 0 { return "flowID" }
    if let path = values.firstMissingRequiredField { return "values\(path)" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .required(1, "questionID", \.questionID),
    .required(2, "flowID", \.flowID),
    .repeated(3, "values", \.values),
    .optional(4, "answeredAt", \.answeredAt),
  ]
}
