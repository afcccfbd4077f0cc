public import PushlineWire

/// A topic to subscribe to and where the client's copy of it stands
/// (`pushline.broker.TopicPosition`).
public struct TopicPosition: ReflectableMessage {
  public static let protoName = "pushline.broker.TopicPosition"

  /// The topic. Required.
  public var topic: String = "" { didSet { requiredFieldsSet |= 0b1 } }
  /// The epoch of the client's last applied update; `nil` when it has none.
  public var epoch: Int64?
  /// The `throughOffset` of the client's last applied update; `nil` when it has none.
  public var offset: Int64?
  public var unknownFields = UnknownFields()

  var requiredFieldsSet: UInt8 = 0

  public init() {}

  /// A value with its required fields set.
  public init(topic: String) {
    self.topic = topic
    requiredFieldsSet = 0b1
  }

  /// `topic` at `epoch` and `offset`, or with no position when they are `nil`.
  public init(topic: String, epoch: Int64?, offset: Int64?) {
    self.init(topic: topic)
    self.epoch = epoch
    self.offset = offset
  }

  public func encodedSize() -> Int {
    WireSize.field(topic) &+ WireSize.field(epoch) &+ WireSize.field(offset) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x18, offset)
    writer.write(0x10, epoch)
    writer.write(0x0A, topic)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x0A: topic = try reader.readString()
      case 0x10: epoch = try reader.readInt64()
      case 0x18: offset = try reader.readInt64()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b1 == 0 { return "topic" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .required(1, "topic", \.topic),
    .optional(2, "epoch", \.epoch),
    .optional(3, "offset", \.offset),
  ]
}
