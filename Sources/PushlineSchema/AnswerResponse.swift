public import PushlineWire

/// The server's reply to an answer batch (`pushline.onboarding.AnswerResponse`): exactly one of the
/// next question(s), every validation error at once, or a session.
public struct AnswerResponse: ReflectableMessage {
  public static let protoName = "pushline.onboarding.AnswerResponse"

  /// The flow. Required.
  public var flowID: String = "" { didSet { requiredFieldsSet |= 0b1 } }
  /// The next question(s).
  public var questions: [Question] = []
  /// Every validation error of the batch.
  public var errors: [ValidationError] = []
  /// The session that ends the flow.
  public var session: Session?
  public var unknownFields = UnknownFields()

  var requiredFieldsSet: UInt8 = 0

  public init() {}

  /// A value with its required fields set.
  public init(flowID: String) {
    self.flowID = flowID
    requiredFieldsSet = 0b1
  }

  public func encodedSize() -> Int {
    WireSize.field(flowID) &+ WireSize.field(questions) &+ WireSize.field(errors) &+ WireSize.field(session)
      &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x22, session)
    writer.write(0x1A, errors)
    writer.write(0x12, questions)
    writer.write(0x0A, flowID)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x0A: flowID = try reader.readString()
      case 0x12: try reader.readMessage(appendingTo: &questions)
      case 0x1A: try reader.readMessage(appendingTo: &errors)
      case 0x22: try reader.readMessage(into: &session)
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b1 == 0 { return "flowID" }
    if let path = questions.firstMissingRequiredField { return "questions\(path)" }
    if let path = errors.firstMissingRequiredField { return "errors\(path)" }
    if let path = session?.missingRequiredField { return "session.\(path)" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .required(1, "flowID", \.flowID),
    .repeated(2, "questions", \.questions),
    .repeated(3, "errors", \.errors),
    .optional(4, "session", \.session),
  ]
}
