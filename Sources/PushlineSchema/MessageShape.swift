import PushlineWire
import Synchronization

/// What a message type's fields look like on the wire — for each field number, the wire type
/// its decoder reads and what it checks — so that an encoding can be checked without being
/// decoded: no strings, arrays or sub-message values built, nothing allocated.
///
/// A check proves that the decoder would accept the bytes: ``certainlyDecodes(_:)`` returns
/// `true` only then. It returns `false` when it cannot tell cheaply — malformed bytes, or a
/// sub-message occurrence without all its required fields, which a later occurrence may
/// still complete when protobuf merges them — and the caller decodes to know. This holds for
/// messages whose field descriptors are those their decoders read, as the schema's are (a
/// test compares the check with the decoder for every registered message).
final class MessageShape: @unchecked Sendable {
  // @unchecked: `fields` is filled once, while the shape is built and before anyone else
  // sees it (a recursive message refers to its own shape while it is being filled).

  /// How a known field's value is read and checked.
  private enum Kind {
    case varint, fixed64, fixed32, string
    /// A closed enum, whose defined numbers are ``MessageShape/enumNumbers``[index]: the
    /// decoder keeps an undefined number as an unknown field, leaving the field unset.
    case enumeration(Int)
    /// Bytes, which the decoder does not check: skipped as an unknown field would be.
    case bytes
    /// A sub-message, whose shape is ``MessageShape/subShapes``[index].
    case message(Int)
  }

  /// A known field: plain values only, so that looking one up copies no reference.
  private struct Field {
    var number: UInt32
    var kind: Kind
    var isRepeated: Bool
    /// The field's bit in ``MessageShape/requiredMask``, or 0 when it is not required.
    var requiredBit: UInt64
  }

  private var fields: [Field] = []
  /// For each field number below ``directLimit``, its index in ``fields``, or -1.
  private var fieldIndexByNumber = [Int8](repeating: -1, count: MessageShape.directLimit)
  private var subShapes: [MessageShape] = []
  private var enumNumbers: [[Int32]] = []
  /// One bit per required field (the first 64): all set once an occurrence is complete.
  private var requiredMask: UInt64 = 0
  /// Whether the message has more than 64 required fields, past what a check tracks.
  private var hasUntrackedRequiredFields = false

  /// Field numbers below this are found by indexing; others (none in this schema) by search.
  private static let directLimit = 64

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
      case .int64, .sint64, .uint32, .bool: kind = .varint
      case .enumeration(let descriptor):
        kind = .enumeration(shape.enumNumbers.count)
        shape.enumNumbers.append(descriptor.values.map(\.number))
      case .string: kind = .string
      case .bytes: kind = .bytes
      case .message(let type):
        kind = .message(shape.subShapes.count)
        shape.subShapes.append(Self.shape(of: type, building: &building))
      }
      var requiredBit: UInt64 = 0
      if descriptor.label == .required {
        if requiredCount < 64 { requiredBit = 1 << UInt64(requiredCount) } else { shape.hasUntrackedRequiredFields = true }
        requiredCount += 1
      }
      if descriptor.number < directLimit, shape.fields.count <= Int(Int8.max) {
        shape.fieldIndexByNumber[descriptor.number] = Int8(shape.fields.count)
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
    requiredFieldsPresent(in: &reader).map(isComplete) ?? false
  }

  /// The required fields that one occurrence of the message, up to `reader`'s end, sets (a
  /// mask for ``isComplete(_:)``: occurrences merge, so their masks combine with `|`), when it
  /// certainly decodes — its sub-messages complete; `nil` when malformed or unsure.
  func requiredFieldsPresent(in reader: inout WireReader) -> UInt64? {
    try? check(&reader)
  }

  /// Whether the required fields in `present` are all of them.
  func isComplete(_ present: UInt64) -> Bool {
    !hasUntrackedRequiredFields && present & requiredMask == requiredMask
  }

  private func check(_ reader: inout WireReader) throws(WireDecodingError) -> UInt64 {
    var present: UInt64 = 0
    while !reader.isAtEnd {
      let tagStart = reader.offset
      let tag = try reader.readTag()
      guard let field = field(numbered: tag >> 3), let isSet = try read(field, wireType: tag & 7, from: &reader) else {
        // A field this message does not know, or a known number with another wire type: the
        // decoder keeps it as an unknown field.
        try reader.skipField(tag: tag, startingAt: tagStart)
        continue
      }
      if isSet { present |= field.requiredBit }
    }
    return present
  }

  /// The known field `number`, if any.
  private func field(numbered number: UInt32) -> Field? {
    guard number < Self.directLimit else { return fields.first { $0.number == number } }
    let index = fieldIndexByNumber[Int(number)]
    return index < 0 ? nil : fields[Int(index)]
  }

  /// Reads `field`'s value if `wireType` is the one its decoder reads: whether the decoder
  /// would set the field (not for an enum number the enum does not define), or `nil`, having
  /// read nothing, for another wire type. Throws when the value is malformed or a sub-message
  /// is not certainly complete.
  private func read(_ field: Field, wireType: UInt32, from reader: inout WireReader) throws(WireDecodingError) -> Bool? {
    switch (field.kind, wireType) {
    case (.varint, 0): _ = try reader.readVarint()
    case (.varint, 2) where field.isRepeated, (.enumeration, 2) where field.isRepeated: try reader.readPackedVarints { _ in }
    case (.enumeration(let index), 0): return enumNumbers[index].contains(Int32(truncatingIfNeeded: try reader.readVarint()))
    case (.fixed64, 1): _ = try reader.readFixed64()
    case (.fixed32, 5): _ = try reader.readFixed32()
    case (.string, 2): try reader.skipString()
    case (.message(let index), 2):
      let shape = subShapes[index]
      let present = try reader.readSubMessage(named: "sub-message") { reader throws(WireDecodingError) in try shape.check(&reader) }
      guard shape.isComplete(present) else { throw WireDecodingError(.missingRequiredField, at: reader.offset) }
    default: return nil
    }
    return true
  }
}
