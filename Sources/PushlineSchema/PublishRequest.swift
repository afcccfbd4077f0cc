public import PushlineWire

/// A batch of changes to one topic (`pushline.broker.PublishRequest`), with its cards decoded:
/// what publishers build.
public typealias PublishRequest = PublishRequestMessage<TrackerCard>

/// A batch of changes to one topic (`pushline.broker.PublishRequest`), applied atomically and
/// acknowledged once durable. `Card` is how the message holds its cards: see
/// ``CardRepresentation``.
public struct PublishRequestMessage<Card: CardRepresentation>: WireMessage {
  public static var protoName: String { "pushline.broker.PublishRequest" }

  /// The topic, for example `driver/42`. Required.
  public var topic: String = "" { didSet { requiredFieldsSet |= 0b1 } }
  /// The changes, each card at most once.
  public var changes: [CardChangeMessage<Card>] = []
  /// Makes a retry safe: within the broker's window, a publish with the same topic and key
  /// returns the first one's offsets instead of applying again.
  public var idempotencyKey: String?
  public var unknownFields = UnknownFields()

  @usableFromInline var requiredFieldsSet: UInt8 = 0

  @inlinable
  public init() {}

  /// A value with its required fields set.
  @inlinable
  public init(topic: String) {
    self.topic = topic
    requiredFieldsSet = 0b1
  }

  /// A publish of `changes` to `topic`.
  @inlinable
  public init(topic: String, changes: [CardChangeMessage<Card>], idempotencyKey: String? = nil) {
    self.init(topic: topic)
    self.changes = changes
    self.idempotencyKey = idempotencyKey
  }

  @inlinable
  public func encodedSize() -> Int {
    WireSize.field(topic) &+ WireSize.field(changes) &+ WireSize.field(idempotencyKey) &+ unknownFields.encodedSize
  }

  @inlinable
  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x1A, idempotencyKey)
    writer.write(0x12, changes)
    writer.write(0x0A, topic)
  }

  @inlinable
  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x0A: topic = try reader.readString()
      case 0x12: try reader.readMessage(appendingTo: &changes)
      case 0x1A: idempotencyKey = try reader.readString()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  @inlinable
  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b1 == 0 { return "topic" }
    if let path = changes.firstMissingRequiredField { return "changes\(path)" }
    return nil
  }
}

extension PublishRequestMessage: FieldRepresentable, ReflectableMessage where Card == TrackerCard {
  public static var fields: [FieldDescriptor<Self>] {
    [
      .required(1, "topic", \.topic),
      .repeated(2, "changes", \.changes),
      .optional(3, "idempotencyKey", \.idempotencyKey),
    ]
  }
}
