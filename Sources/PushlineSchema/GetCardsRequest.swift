public import PushlineWire

/// Asks for a topic's snapshot (`pushline.broker.GetCardsRequest`).
public struct GetCardsRequest: ReflectableMessage {
  public static let protoName = "pushline.broker.GetCardsRequest"

  /// The topic. Required.
  public var topic: String = "" { didSet { requiredFieldsSet |= 0b1 } }
  public var unknownFields = UnknownFields()

  var requiredFieldsSet: UInt8 = 0

  public init() {}

  /// A value with its required fields set.
  public init(topic: String) {
    self.topic = topic
    requiredFieldsSet = 0b1
  }

  public func encodedSize() -> Int {
    WireSize.field(topic) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x0A, topic)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x0A: topic = try reader.readString()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b1 == 0 { return "topic" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .required(1, "topic", \.topic)
  ]
}
