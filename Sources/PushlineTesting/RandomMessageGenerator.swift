public import PushlineSchema
import PushlineWire

/// Builds random messages of any schema type, for property and compatibility tests.
///
/// Values aim at the corners codecs get wrong: varint size boundaries, extreme and negative
/// integers, -0.0, subnormals, NaN and infinities, empty and multibyte strings (including
/// 4-byte emoji and lengths around 127/128), sub-messages of every size, and unknown fields of
/// every wire type at every level. Every optional field is present about half of the time.
public struct RandomMessageGenerator: Sendable {
  /// What the generator may produce.
  public struct Options: Sendable {
    /// Add unknown fields (numbers the message does not use) to about a quarter of messages.
    public var unknownFields = true
    /// Allow U+0000 inside strings (protobuf-c truncates at it, so its corpus must not).
    public var embeddedNUL = false
    /// Nesting depth at which recursive fields (`Question.alternates`) stop growing.
    public var maxDepth = 4

    /// The defaults: unknown fields on, no embedded NUL.
    public init() {}
  }

  /// The seed this generator started from, to print when a property fails.
  public let seed: UInt64
  /// What the generator may produce.
  public var options: Options
  private var generator: SplitMix64

  /// A generator whose messages are fixed by `seed`.
  public init(seed: UInt64, options: Options = Options()) {
    self.seed = seed
    self.options = options
    generator = SplitMix64(seed: seed)
  }

  /// A random message of `type`, every required field set.
  public mutating func message(of type: any ReflectableMessage.Type) -> any ReflectableMessage {
    message(type, depth: 0)
  }

  /// A random message of `M`, every required field set.
  public mutating func message<M: ReflectableMessage>(_ type: M.Type) -> M {
    build(type, depth: 0)
  }

  private mutating func build<M: ReflectableMessage>(_ type: M.Type, depth: Int) -> M {
    var message = M()
    for field in M.fields {
      let count: Int
      switch field.label {
      case .required: count = 1
      case .optional: count = Bool.random(using: &generator) ? 1 : 0
      case .repeated: count = depth >= options.maxDepth ? 0 : Int.random(in: 0...4, using: &generator)
      }
      if case .message = field.type, depth >= options.maxDepth, field.label != .required { continue }
      let values = (0..<count).map { _ in value(of: field.type, depth: depth) }
      _ = field.setValues(&message, values)
    }
    if options.unknownFields, Int.random(in: 0..<4, using: &generator) == 0 {
      message.unknownFields = unknownFields(avoiding: Set(M.fields.map(\.number)))
    }
    return message
  }

  private mutating func value(of type: FieldType, depth: Int) -> FieldValue {
    switch type {
    case .double: .double(double())
    case .float: .float(float())
    case .int64, .sint64: .int64(int64())
    case .uint32: .uint32(uint32())
    case .bool: .bool(Bool.random(using: &generator))
    case .string: .string(string())
    case .bytes: .bytes((0..<Int.random(in: 0...40, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) })
    case .enumeration(let descriptor): .enumeration(descriptor.values.randomElement(using: &generator)!.number)
    case .message(let messageType): .message(message(messageType, depth: depth + 1))
    }
  }

  /// Opens the existential so the generic builder can run.
  private mutating func message(_ type: any ReflectableMessage.Type, depth: Int) -> any ReflectableMessage {
    build(type, depth: depth)
  }

  // MARK: Values

  private static let boundaries: [UInt64] = [
    0, 1, 127, 128, 16_383, 16_384, 1 << 21 - 1, 1 << 21, 1 << 28 - 1, 1 << 28, 1 << 35 - 1, 1 << 35,
    1 << 42, 1 << 49, 1 << 56, 1 << 63 - 1, 1 << 63, .max,
  ]

  private mutating func int64() -> Int64 {
    switch Int.random(in: 0..<4, using: &generator) {
    case 0: Int64(bitPattern: Self.boundaries.randomElement(using: &generator)!)
    case 1: -Int64(truncatingIfNeeded: Self.boundaries.randomElement(using: &generator)! & (UInt64.max >> 1))
    case 2: [Int64.min, Int64.max, -1, 0].randomElement(using: &generator)!
    default: Int64.random(in: -1_000_000...4_000_000_000, using: &generator)
    }
  }

  private mutating func uint32() -> UInt32 {
    Bool.random(using: &generator)
      ? UInt32(truncatingIfNeeded: Self.boundaries.filter { $0 <= UInt32.max }.randomElement(using: &generator)!)
      : UInt32.random(in: 0...UInt32.max, using: &generator)
  }

  private mutating func double() -> Double {
    switch Int.random(in: 0..<3, using: &generator) {
    case 0:
      [0.0, -0.0, 0.1, 1.5, -2.25, .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .leastNonzeroMagnitude,
       .leastNormalMagnitude, .nan, .infinity, -.infinity, 1e300, 1e-300].randomElement(using: &generator)!
    case 1: Double(bitPattern: generator.next())  // Any bit pattern, NaN payloads included.
    default: Double.random(in: -1e6...1e6, using: &generator)
    }
  }

  private mutating func float() -> Float {
    switch Int.random(in: 0..<3, using: &generator) {
    case 0:
      [0.0, -0.0, 0.1, 0.5, 1, .greatestFiniteMagnitude, .leastNonzeroMagnitude, .nan, .infinity, -.infinity]
        .randomElement(using: &generator)!
    case 1: Float(bitPattern: UInt32(truncatingIfNeeded: generator.next()))
    default: Float.random(in: 0...1, using: &generator)
    }
  }

  private static let alphabet: [Character] = [
    "a", "Z", "0", " ", "$", ".", "é", "ü", "ß", "中", "文", "€", "😀", "🚗", "\u{7F}", "\u{80}", "\u{7FF}",
    "\u{800}", "\u{FFFF}", "\u{10000}", "\u{10FFFF}", "\"", "\\", "\n",
  ]

  private mutating func string() -> String {
    let length: Int
    switch Int.random(in: 0..<50, using: &generator) {
    case 0..<5: length = 0
    case 5..<10: length = Int.random(in: 125...130, using: &generator)
    case 10: length = Int.random(in: 2_000...5_000, using: &generator)
    default: length = Int.random(in: 1...24, using: &generator)
    }
    var string = String((0..<length).map { _ in Self.alphabet.randomElement(using: &generator)! })
    if options.embeddedNUL, Int.random(in: 0..<8, using: &generator) == 0 { string += "\u{0}tail" }
    return string
  }

  /// One to three unknown fields of random wire types, numbered outside `used`.
  private mutating func unknownFields(avoiding used: Set<Int>) -> UnknownFields {
    var fields: [UInt8] = []
    for _ in 0..<Int.random(in: 1...3, using: &generator) {
      var number: Int
      repeat {
        number = Int.random(in: 0..<10, using: &generator) == 0
          ? (1 << 29) - 1 : Int.random(in: 12...5_000, using: &generator)
      } while used.contains(number)
      let wireType = [WireType.varint, .fixed64, .lengthDelimited, .fixed32].randomElement(using: &generator)!
      fields += Self.varint(UInt64(number) << 3 | UInt64(wireType.rawValue))
      switch wireType {
      case .varint: fields += Self.varint(Self.boundaries.randomElement(using: &generator)!)
      case .fixed64: fields += withUnsafeBytes(of: generator.next().littleEndian, Array.init)
      case .fixed32: fields += withUnsafeBytes(of: UInt32(truncatingIfNeeded: generator.next()).littleEndian, Array.init)
      default:
        let payload = (0..<Int.random(in: 0...20, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        fields += Self.varint(UInt64(payload.count)) + payload
      }
    }
    return UnknownFields(bytes: fields)
  }

  private static func varint(_ value: UInt64) -> [UInt8] {
    var bytes: [UInt8] = []
    var v = value
    while v >= 0x80 {
      bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
      v >>= 7
    }
    bytes.append(UInt8(v))
    return bytes
  }
}
