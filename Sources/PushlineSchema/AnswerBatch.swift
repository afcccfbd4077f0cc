public import PushlineWire

/// Several answers sent together (`pushline.onboarding.AnswerBatch`): clients batch on slow networks.
public struct AnswerBatch: ReflectableMessage {
  public static let protoName = "pushline.onboarding.AnswerBatch"

  /// The flow. Required.
  public var flowID: String = "" { didSet { requiredFieldsSet |= 0b1 } }
  /// The answers, in the order they were collected.
  public var answers: [Answer] = []
  public var unknownFields = UnknownFields()

  var requiredFieldsSet: UInt8 = 0

  public init() {}

  /// A value with its required fields set.
  public init(flowID: String) {
    self.flowID = flowID
    requiredFieldsSet = 0b1
  }

  public func encodedSize() -> Int {
    WireSize.field(flowID) &+ WireSize.field(answers) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x12, answers)
    writer.write(0x0A, flowID)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x0A: flowID = try reader.readString()
      case 0x12: try reader.readMessage(appendingTo: &answers)
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b1 == 0 { return "flowID" }
    if let path = answers.firstMissingRequiredField { return "answers\(path)" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .required(1, "flowID", \.flowID),
    .repeated(2, "answers", \.answers),
  ]
}
