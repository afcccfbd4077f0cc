public import PushlineWire

/// Opens a subscription to one or more topics (`pushline.broker.SubscribeRequest`).
public struct SubscribeRequest: ReflectableMessage {
  public static let protoName = "pushline.broker.SubscribeRequest"

  /// The topics, each once, with the client's position in each.
  public var topics: [TopicPosition] = []
  public var unknownFields = UnknownFields()

  public init() {}

  /// A subscription to `topics`.
  public init(topics: [TopicPosition]) {
    self.topics = topics
  }

  public func encodedSize() -> Int {
    WireSize.field(topics) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x0A, topics)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x0A: try reader.readMessage(appendingTo: &topics)
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if let path = topics.firstMissingRequiredField { return "topics\(path)" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .repeated(1, "topics", \.topics)
  ]
}
