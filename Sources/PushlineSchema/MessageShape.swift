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
///
/// A shape holds its message and every message under it, flattened into one immutable table
/// (sub-messages by index, so a recursive message needs no cycle of references).
final class MessageShape: Sendable {
  /// How a known field's value is read and checked.
  private enum Kind {
    case varint, fixed64, fixed32, string
    /// A closed enum, whose defined numbers are ``Message/enumNumbers``[index]: the decoder
    /// keeps an undefined number as an unknown field, leaving the field unset.
    case enumeration(Int)
    /// Bytes, which the decoder does not check: skipped as an unknown field would be.
    case bytes
    /// A sub-message, ``MessageShape/messages``[index].
    case message(Int)
  }

  /// A known field: plain values only, so that looking one up copies no reference.
  private struct Field {
    var number: UInt32
    var kind: Kind
    var isRepeated: Bool
    /// The field's bit in ``Message/requiredMask``, or 0 when it is not required.
    var requiredBit: UInt64
  }

  /// One message type of the table.
  private struct Message {
    var fields: [Field] = []
    /// For each field number below ``MessageShape/directLimit``, its index in `fields`, or -1.
    var fieldIndexByNumber = [Int8](repeating: -1, count: MessageShape.directLimit)
    var enumNumbers: [[Int32]] = []
    /// One bit per required field (the first 64): all set once an occurrence is complete.
    var requiredMask: UInt64 = 0
    /// Whether the message has more than 64 required fields, past what a check tracks.
    var hasUntrackedRequiredFields = false

    /// The known field `number`, if any.
    func field(numbered number: UInt32) -> Field? {
      guard number < MessageShape.directLimit else { return fields.first { $0.number == number } }
      let index = fieldIndexByNumber[Int(number)]
      return index < 0 ? nil : fields[Int(index)]
    }

    /// Whether the required fields in `present` are all of them.
    func isComplete(_ present: UInt64) -> Bool {
      !hasUntrackedRequiredFields && present & requiredMask == requiredMask
    }
  }

  /// The message (at 0) and the messages under it.
  private let messages: [Message]

  /// Field numbers below this are found by indexing; others (none in this schema) by search.
  private static let directLimit = 64

  private init(messages: [Message]) {
    self.messages = messages
  }

  /// The shape of `Root`, built once per type and shared.
  static func of<Root: ReflectableMessage>(_: Root.Type) -> MessageShape {
    if let shape = built.withLock({ $0[ObjectIdentifier(Root.self)] }) { return shape }
    var messages: [Message] = []
    var indexes: [ObjectIdentifier: Int] = [:]
    _ = add(Root.self, to: &messages, indexes: &indexes)
    let shape = MessageShape(messages: messages)
    return built.withLock { built in
      if let existing = built[ObjectIdentifier(Root.self)] { return existing }
      built[ObjectIdentifier(Root.self)] = shape
      return shape
    }
  }

  private static let built = Mutex<[ObjectIdentifier: MessageShape]>([:])

  /// Adds `Type` (and the messages under it) to `messages` unless it is there; its index.
  private static func add<Type: ReflectableMessage>(
    _: Type.Type, to messages: inout [Message], indexes: inout [ObjectIdentifier: Int]
  ) -> Int {
    if let index = indexes[ObjectIdentifier(Type.self)] { return index }
    let index = messages.count
    indexes[ObjectIdentifier(Type.self)] = index
    messages.append(Message())
    var message = Message()
    var requiredCount = 0
    for descriptor in Type.fields {
      let kind: Kind
      switch descriptor.type {
      case .double: kind = .fixed64
      case .float: kind = .fixed32
      case .int64, .sint64, .uint32, .bool: kind = .varint
      case .enumeration(let values):
        kind = .enumeration(message.enumNumbers.count)
        message.enumNumbers.append(values.values.map(\.number))
      case .string: kind = .string
      case .bytes: kind = .bytes
      case .message(let type):
        func open<Sub: ReflectableMessage>(_ type: Sub.Type) -> Int { add(type, to: &messages, indexes: &indexes) }
        kind = .message(open(type))
      }
      var requiredBit: UInt64 = 0
      if descriptor.label == .required {
        if requiredCount < 64 { requiredBit = 1 << UInt64(requiredCount) } else { message.hasUntrackedRequiredFields = true }
        requiredCount += 1
      }
      if descriptor.number < directLimit, message.fields.count <= Int(Int8.max) {
        message.fieldIndexByNumber[descriptor.number] = Int8(message.fields.count)
      }
      message.fields.append(
        Field(number: UInt32(descriptor.number), kind: kind, isRepeated: descriptor.label == .repeated, requiredBit: requiredBit))
      message.requiredMask |= requiredBit
    }
    messages[index] = message
    return index
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
    try? check(0, &reader)
  }

  /// Whether the required fields in `present` are all of them.
  func isComplete(_ present: UInt64) -> Bool {
    messages[0].isComplete(present)
  }

  private func check(_ index: Int, _ reader: inout WireReader) throws(WireDecodingError) -> UInt64 {
    var present: UInt64 = 0
    while !reader.isAtEnd {
      let tagStart = reader.offset
      let tag = try reader.readTag()
      guard let field = messages[index].field(numbered: tag >> 3), let isSet = try read(field, index, tag & 7, &reader)
      else {
        // A field this message does not know, or a known number with another wire type: the
        // decoder keeps it as an unknown field.
        try reader.skipField(tag: tag, startingAt: tagStart)
        continue
      }
      if isSet { present |= field.requiredBit }
    }
    return present
  }

  /// Reads `field` (of message `index`) if `wireType` is the one its decoder reads: whether
  /// the decoder would set the field (not for an enum number the enum does not define), or
  /// `nil`, having read nothing, for another wire type. Throws when the value is malformed or
  /// a sub-message is not certainly complete.
  private func read(_ field: Field, _ index: Int, _ wireType: UInt32, _ reader: inout WireReader) throws(WireDecodingError) -> Bool? {
    switch (field.kind, wireType) {
    case (.varint, 0): _ = try reader.readVarint()
    case (.varint, 2) where field.isRepeated, (.enumeration, 2) where field.isRepeated: try reader.readPackedVarints { _ in }
    case (.enumeration(let enumIndex), 0):
      return messages[index].enumNumbers[enumIndex].contains(Int32(truncatingIfNeeded: try reader.readVarint()))
    case (.fixed64, 1): _ = try reader.readFixed64()
    case (.fixed32, 5): _ = try reader.readFixed32()
    case (.string, 2): try reader.skipString()
    case (.message(let sub), 2):
      let present = try reader.readSubMessage(named: "sub-message") { reader throws(WireDecodingError) in try check(sub, &reader) }
      guard messages[sub].isComplete(present) else { throw WireDecodingError(.missingRequiredField, at: reader.offset) }
    default: return nil
    }
    return true
  }
}
