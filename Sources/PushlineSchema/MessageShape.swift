import PushlineWire
import Synchronization

/// What a message type's fields look like on the wire — for each field number, the wire type
/// its decoder reads and what it checks — so that an encoding can be checked without being
/// decoded: no strings, arrays or sub-message values built, nothing allocated.
///
/// A check proves that the decoder would accept the bytes: ``certainlyDecodes(_:)`` returns
/// `true` only then. It returns `false` when it cannot tell cheaply — malformed bytes, or a
/// sub-message occurrence without all its required fields, which a later occurrence may
/// still complete when protobuf merges them — and the caller decodes to know.
final class MessageShape: @unchecked Sendable {
  // @unchecked: `fields` is filled once, while the shape is built and before anyone else
  // sees it (a recursive message refers to its own shape while it is being filled).

  /// How a known field's value is read and checked.
  private enum Kind {
    case varint, fixed64, fixed32, string
    /// Bytes, which the decoder does not check: skipped as an unknown field would be.
    case bytes
    /// A sub-message, with its shape.
    case message(MessageShape)
  }

  private struct Field {
    var number: UInt32
    var kind: Kind
    var isRepeated: Bool
    /// The field's bit in ``MessageShape/requiredMask``, or 0 when it is not required.
    var requiredBit: UInt64
  }

  private var fields: [Field] = []
  /// One bit per required field (the first 64): all set once an occurrence is complete.
  private var requiredMask: UInt64 = 0
  /// Whether the message has more than 64 required fields, past what a check tracks.
  private var hasUntrackedRequiredFields = false

  private init() {}

  /// The shape of `Message`, built once per type and shared.
  static func of<Message: ReflectableMessage>(_: Message.Type) -> MessageShape {
    if let shape = built.withLock({ $0[ObjectIdentifier(Message.self)] }) { return shape }
    var building: [ObjectIdentifier: MessageShape] = [:]
    _ = make(Message.self, building: &building)
    return built.withLock { built in
      built.merge(building) { existing, _ in existing }
      return built[ObjectIdentifier(Message.self)]!
    }
  }

  private static let built = Mutex<[ObjectIdentifier: MessageShape]>([:])

  private static func make<Message: ReflectableMessage>(
    _: Message.Type, building: inout [ObjectIdentifier: MessageShape]
  ) -> MessageShape {
    if let shape = building[ObjectIdentifier(Message.self)] { return shape }
    let shape = MessageShape()
    building[ObjectIdentifier(Message.self)] = shape
    var requiredCount = 0
    for descriptor in Message.fields {
      let kind: Kind
      switch descriptor.type {
      case .double: kind = .fixed64
      case .float: kind = .fixed32
      case .int64, .sint64, .uint32, .bool, .enumeration: kind = .varint
      case .string: kind = .string
      case .bytes: kind = .bytes
      case .message(let type): kind = .message(Self.shape(of: type, building: &building))
      }
      var requiredBit: UInt64 = 0
      if descriptor.label == .required {
        if requiredCount < 64 { requiredBit = 1 << UInt64(requiredCount) } else { shape.hasUntrackedRequiredFields = true }
        requiredCount += 1
      }
      shape.fields.append(
        Field(number: UInt32(descriptor.number), kind: kind, isRepeated: descriptor.label == .repeated, requiredBit: requiredBit))
      shape.requiredMask |= requiredBit
    }
    return shape
  }

  private static func shape(of type: any ReflectableMessage.Type, building: inout [ObjectIdentifier: MessageShape]) -> MessageShape {
    func open<Message: ReflectableMessage>(_ type: Message.Type) -> MessageShape { make(type, building: &building) }
    return open(type)
  }

  /// Whether the fields up to `reader`'s end certainly decode as this shape's message, with
  /// every required field present, sub-messages included; `false` when malformed or unsure.
  func certainlyDecodes(_ reader: inout WireReader) -> Bool {
    (try? check(&reader)) ?? false
  }

  private func check(_ reader: inout WireReader) throws(WireDecodingError) -> Bool {
    guard !hasUntrackedRequiredFields else { return false }
    var present: UInt64 = 0
    while !reader.isAtEnd {
      let tagStart = reader.offset
      let tag = try reader.readTag()
      let wireType = tag & 7
      guard let field = fields.first(where: { $0.number == tag >> 3 }), try read(field, wireType: wireType, from: &reader)
      else {
        // A field this message does not know, or a known number with another wire type: the
        // decoder keeps it as an unknown field.
        try reader.skipField(tag: tag, startingAt: tagStart)
        continue
      }
      present |= field.requiredBit
    }
    return present & requiredMask == requiredMask
  }

  /// Reads `field`'s value if `wireType` is the one its decoder reads; `false` (nothing read)
  /// when it is not. Throws when the value is malformed or a sub-message is not certain.
  private func read(_ field: Field, wireType: UInt32, from reader: inout WireReader) throws(WireDecodingError) -> Bool {
    switch (field.kind, wireType) {
    case (.varint, 0): _ = try reader.readVarint()
    case (.varint, 2) where field.isRepeated: try reader.readPackedVarints { _ in }
    case (.fixed64, 1): _ = try reader.readFixed64()
    case (.fixed32, 5): _ = try reader.readFixed32()
    case (.string, 2): try reader.skipString()
    case (.message(let shape), 2):
      guard try reader.readSubMessage(named: "sub-message", shape.check) else {
        throw WireDecodingError(.missingRequiredField, at: reader.offset)
      }
    default: return false
    }
    return true
  }
}
