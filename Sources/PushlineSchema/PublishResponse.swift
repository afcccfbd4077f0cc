public import PushlineWire

/// Where a publish landed (`pushline.broker.PublishResponse`): its changes took the offsets
/// `firstOffset...lastOffset` of the topic's `epoch`, in order.
public struct PublishResponse: ReflectableMessage {
  public static let protoName = "pushline.broker.PublishResponse"

  /// The topic's epoch. Required.
  public var epoch: Int64 = 0 { didSet { requiredFieldsSet |= 0b001 } }
  /// The offset of the publish's first change. Required.
  public var firstOffset: Int64 = 0 { didSet { requiredFieldsSet |= 0b010 } }
  /// The offset of its last change. Required.
  public var lastOffset: Int64 = 0 { didSet { requiredFieldsSet |= 0b100 } }
  /// True when this answers a retry from the idempotency window: nothing was applied again.
  public var replayed: Bool?
  public var unknownFields = UnknownFields()

  var requiredFieldsSet: UInt8 = 0

  public init() {}

  /// A value with its required fields set.
  public init(epoch: Int64, firstOffset: Int64, lastOffset: Int64) {
    self.epoch = epoch
    self.firstOffset = firstOffset
    self.lastOffset = lastOffset
    requiredFieldsSet = 0b111
  }

  public func encodedSize() -> Int {
    WireSize.field(epoch) &+ WireSize.field(firstOffset) &+ WireSize.field(lastOffset) &+ WireSize.field(replayed)
      &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x20, replayed)
    writer.write(0x18, lastOffset)
    writer.write(0x10, firstOffset)
    writer.write(0x08, epoch)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x08: epoch = try reader.readInt64()
      case 0x10: firstOffset = try reader.readInt64()
      case 0x18: lastOffset = try reader.readInt64()
      case 0x20: replayed = try reader.readBool()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b001 == 0 { return "epoch" }
    if requiredFieldsSet & 0b010 == 0 { return "firstOffset" }
    if requiredFieldsSet & 0b100 == 0 { return "lastOffset" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .required(1, "epoch", \.epoch),
    .required(2, "firstOffset", \.firstOffset),
    .required(3, "lastOffset", \.lastOffset),
    .optional(4, "replayed", \.replayed),
  ]
}
