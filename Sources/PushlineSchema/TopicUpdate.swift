public import PushlineWire

/// Changes to one topic (`pushline.broker.TopicUpdate`), with their cards decoded: what clients
/// read.
public typealias TopicUpdate = TopicUpdateMessage<TrackerCard>

/// What a subscription delivers and what GetCards returns (`pushline.broker.TopicUpdate`):
/// changes to one topic, after which the client's position is `throughOffset`.
/// `Card` is how the message holds its cards: see ``CardRepresentation``.
public struct TopicUpdateMessage<Card: CardRepresentation>: WireMessage {
  public static var protoName: String { "pushline.broker.TopicUpdate" }

  /// The topic. Required.
  public var topic: String = "" { didSet { requiredFieldsSet |= 0b001 } }
  /// The topic's epoch. Required.
  public var epoch: Int64 = 0 { didSet { requiredFieldsSet |= 0b010 } }
  /// True when `changes` are the topic's whole state, replacing the client's cards.
  public var snapshot: Bool?
  /// The changes, in increasing offset order.
  public var changes: [CardChangeMessage<Card>] = []
  /// The client's position once it has applied the update. Required.
  public var throughOffset: Int64 = 0 { didSet { requiredFieldsSet |= 0b100 } }
  /// The broker's clock when it sent the update, in Unix milliseconds.
  public var serverTimeMillis: Int64?
  /// Set on the first part of a snapshot sent in parts: the offset the whole snapshot reaches
  /// (the topic's top when it was taken), so that a client keeps the cards it held until its
  /// position reaches it at a complete update, rather than dropping those the later parts
  /// bring again.
  public var snapshotThroughOffset: Int64?
  /// True only when, once it has applied the update, the client holds exactly the topic's
  /// state at `throughOffset`, expired cards aside: after it nothing of the topic waits to be
  /// sent to this subscriber, or it is the last part of a snapshot or of a resume's catch-up,
  /// or a watermark. (Short of that, a card whose older version was skipped may have its newer
  /// one still to come.) A client finishes a snapshot in parts only at such an update.
  public var complete: Bool?
  public var unknownFields = UnknownFields()

  @usableFromInline var requiredFieldsSet: UInt8 = 0

  @inlinable
  public init() {}

  /// A value with its required fields set.
  @inlinable
  public init(topic: String, epoch: Int64, throughOffset: Int64) {
    self.topic = topic
    self.epoch = epoch
    self.throughOffset = throughOffset
    requiredFieldsSet = 0b111
  }

  /// Whether the update replaces the topic's cards rather than changing some.
  @inlinable
  public var isSnapshot: Bool { snapshot ?? false }

  /// Whether the client's copy is exactly the topic's state once it has applied the update.
  @inlinable
  public var isComplete: Bool { complete ?? false }

  @inlinable
  public func encodedSize() -> Int {
    WireSize.field(topic) &+ WireSize.field(epoch) &+ WireSize.field(snapshot) &+ WireSize.field(changes)
      &+ WireSize.field(throughOffset) &+ WireSize.field(serverTimeMillis) &+ WireSize.field(snapshotThroughOffset)
      &+ WireSize.field(complete) &+ unknownFields.encodedSize
  }

  @inlinable
  public func encode(to writer: inout WireWriter) {
    encode(to: &writer) { $0.write(0x22, changes) }
  }

  /// Writes the update with `writeChanges` writing its `changes` entries: for an update whose
  /// changes are in part held elsewhere (``AssembledTopicUpdate``).
  @inlinable
  func encode(to writer: inout WireWriter, writingChanges writeChanges: (inout WireWriter) -> Void) {
    unknownFields.write(to: &writer)
    writer.write(0x40, complete)
    writer.write(0x38, snapshotThroughOffset)
    writer.write(0x30, serverTimeMillis)
    writer.write(0x28, throughOffset)
    writeChanges(&writer)
    writer.write(0x18, snapshot)
    writer.write(0x10, epoch)
    writer.write(0x0A, topic)
  }

  @inlinable
  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x0A: topic = try reader.readString()
      case 0x10: epoch = try reader.readInt64()
      case 0x18: snapshot = try reader.readBool()
      case 0x22: try reader.readMessage(appendingTo: &changes)
      case 0x28: throughOffset = try reader.readInt64()
      case 0x30: serverTimeMillis = try reader.readInt64()
      case 0x38: snapshotThroughOffset = try reader.readInt64()
      case 0x40: complete = try reader.readBool()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  @inlinable
  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b001 == 0 { return "topic" }
    if requiredFieldsSet & 0b010 == 0 { return "epoch" }
    if requiredFieldsSet & 0b100 == 0 { return "throughOffset" }
    if let path = changes.firstMissingRequiredField { return "changes\(path)" }
    return nil
  }
}

extension TopicUpdateMessage: FieldRepresentable, ReflectableMessage where Card == TrackerCard {
  public static var fields: [FieldDescriptor<Self>] {
    [
      .required(1, "topic", \.topic),
      .required(2, "epoch", \.epoch),
      .optional(3, "snapshot", \.snapshot),
      .repeated(4, "changes", \.changes),
      .required(5, "throughOffset", \.throughOffset),
      .optional(6, "serverTimeMillis", \.serverTimeMillis),
      .optional(7, "snapshotThroughOffset", \.snapshotThroughOffset),
      .optional(8, "complete", \.complete),
    ]
  }
}
