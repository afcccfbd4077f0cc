public import PushlineWire

/// A question the onboarding flow asks (`pushline.onboarding.Question`): the data types it
/// needs, the scenario it belongs to, how to collect them, and alternates.
public struct Question: ReflectableMessage {
  public static let protoName = "pushline.onboarding.Question"

  /// Identifies the question within its flow. Required.
  public var questionID: String = "" { didSet { requiredFieldsSet |= 0b01 } }
  /// The attempt (flow instance) the question belongs to. Required.
  public var flowID: String = "" { didSet { requiredFieldsSet |= 0b10 } }
  /// The scenario, which styles the steps.
  public var scenario: Scenario?
  /// The data types the answer must carry (packed on the wire).
  public var dataTypes: [DataType] = []
  /// One step or a sequence of steps.
  public var collectionMode: CollectionMode?
  /// Questions the user may answer instead; answering one switches scenario.
  public var alternates: [Question] = []
  /// Contextual copy shown above the step.
  public var prompt: String?
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
    WireSize.field(questionID) &+ WireSize.field(flowID) &+ WireSize.field(scenario)
      &+ WireSize.packedField(dataTypes) &+ WireSize.field(collectionMode) &+ WireSize.field(alternates)
      &+ WireSize.field(prompt) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x3A, prompt)
    writer.write(0x32, alternates)
    writer.write(0x28, collectionMode)
    writer.writePacked(0x22, dataTypes)
    writer.write(0x18, scenario)
    writer.write(0x12, flowID)
    writer.write(0x0A, questionID)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x0A: questionID = try reader.readString()
      case 0x12: flowID = try reader.readString()
      case 0x18:
        if let value = try reader.readEnum(Scenario.self, fieldNumber: 3, unknownFields: &unknownFields) {
          scenario = value
        }
      case 0x22:
        try reader.readEnums(appendingTo: &dataTypes, packed: true, fieldNumber: 4, unknownFields: &unknownFields)
      case 0x20:
        try reader.readEnums(appendingTo: &dataTypes, packed: false, fieldNumber: 4, unknownFields: &unknownFields)
      case 0x28:
        if let value = try reader.readEnum(CollectionMode.self, fieldNumber: 5, unknownFields: &unknownFields) {
          collectionMode = value
        }
      case 0x32: try reader.readMessage(appendingTo: &alternates)
      case 0x3A: prompt = try reader.readString()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b01 == 0 { return "questionID" }
    if requiredFieldsSet & 0b10 == 0 { return "flowID" }
    if let path = alternates.firstMissingRequiredField { return "alternates\(path)" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .required(1, "questionID", \.questionID),
    .required(2, "flowID", \.flowID),
    .optional(3, "scenario", \.scenario),
    .repeated(4, "dataTypes", \.dataTypes),
    .optional(5, "collectionMode", \.collectionMode),
    .repeated(6, "alternates", \.alternates),
    .optional(7, "prompt", \.prompt),
  ]
}
