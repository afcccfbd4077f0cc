/// A strict RFC 8259 JSON parser producing ``JSONValue``.
///
/// Foundation's `JSONSerialization` turns numbers into `NSNumber`, losing the exact text the
/// protobuf JSON mapping needs for 64-bit integers, and traps on some out-of-range input; this
/// parser keeps literals as written and reports errors with their byte offset.
public struct JSONParser {
  /// A JSON syntax error and where it is.
  public struct SyntaxError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What is wrong.
    public var message: String
    /// The byte offset in the input.
    public var offset: Int
    /// Where the document holding the error begins, for an error of ``parseSequence(_:)``.
    public var documentOffset: Int?
    public var description: String { "invalid JSON at byte \(offset): \(message)" }
  }

  private let bytes: [UInt8]
  private var index = 0
  private var depth = 0
  private static let maxDepth = 200

  /// Parses one JSON document; trailing white space is allowed, anything else is an error.
  public static func parse(_ text: some StringProtocol) throws(SyntaxError) -> JSONValue {
    var parser = JSONParser(bytes: Array(text.utf8))
    let value = try parser.parseValue()
    parser.skipWhitespace()
    guard parser.index == parser.bytes.count else { throw parser.error("unexpected text after the document") }
    return value
  }

  /// Parses a sequence of JSON documents, each with the byte offset where it begins: JSON
  /// lines, or documents written one after another, pretty-printed or not. White space
  /// between them is skipped and none is needed; empty or blank text is an empty sequence.
  public static func parseSequence(_ text: some StringProtocol) throws(SyntaxError) -> [(offset: Int, value: JSONValue)] {
    var parser = JSONParser(bytes: Array(text.utf8))
    var documents: [(offset: Int, value: JSONValue)] = []
    while true {
      parser.skipWhitespace()
      guard parser.index < parser.bytes.count else { return documents }
      let offset = parser.index
      do {
        documents.append((offset, try parser.parseValue()))
      } catch {
        var located = error
        located.documentOffset = offset
        throw located
      }
    }
  }

  private init(bytes: [UInt8]) { self.bytes = bytes }

  private func error(_ message: String) -> SyntaxError { SyntaxError(message: message, offset: index) }

  private mutating func skipWhitespace() {
    while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
  }

  private mutating func parseValue() throws(SyntaxError) -> JSONValue {
    skipWhitespace()
    guard index < bytes.count else { throw error("unexpected end of input") }
    switch bytes[index] {
    case UInt8(ascii: "{"): return try parseObject()
    case UInt8(ascii: "["): return try parseArray()
    case UInt8(ascii: "\""): return .string(try parseString())
    case UInt8(ascii: "t"): try expect("true"); return .bool(true)
    case UInt8(ascii: "f"): try expect("false"); return .bool(false)
    case UInt8(ascii: "n"): try expect("null"); return .null
    case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
    default: throw error("unexpected character")
    }
  }

  private mutating func expect(_ literal: String) throws(SyntaxError) {
    let utf8 = Array(literal.utf8)
    guard bytes.count - index >= utf8.count, Array(bytes[index..<index + utf8.count]) == utf8 else {
      throw error("expected \(literal)")
    }
    index += utf8.count
  }

  private mutating func enter() throws(SyntaxError) {
    depth += 1
    guard depth <= Self.maxDepth else { throw error("nesting deeper than \(Self.maxDepth)") }
  }

  private mutating func parseObject() throws(SyntaxError) -> JSONValue {
    try enter()
    index += 1
    var members: [(key: String, value: JSONValue)] = []
    skipWhitespace()
    if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
      index += 1
      depth -= 1
      return .object(members)
    }
    while true {
      skipWhitespace()
      guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a member name") }
      let keyOffset = index
      let key = try parseString()
      guard !members.contains(where: { $0.key == key }) else {
        throw SyntaxError(message: "duplicate member \"\(key)\"", offset: keyOffset)
      }
      skipWhitespace()
      guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
      index += 1
      members.append((key, try parseValue()))
      skipWhitespace()
      guard index < bytes.count else { throw error("unexpected end of input in an object") }
      if bytes[index] == UInt8(ascii: ",") {
        index += 1
      } else if bytes[index] == UInt8(ascii: "}") {
        index += 1
        depth -= 1
        return .object(members)
      } else {
        throw error("expected ',' or '}'")
      }
    }
  }

  private mutating func parseArray() throws(SyntaxError) -> JSONValue {
    try enter()
    index += 1
    var elements: [JSONValue] = []
    skipWhitespace()
    if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
      index += 1
      depth -= 1
      return .array(elements)
    }
    while true {
      elements.append(try parseValue())
      skipWhitespace()
      guard index < bytes.count else { throw error("unexpected end of input in an array") }
      if bytes[index] == UInt8(ascii: ",") {
        index += 1
      } else if bytes[index] == UInt8(ascii: "]") {
        index += 1
        depth -= 1
        return .array(elements)
      } else {
        throw error("expected ',' or ']'")
      }
    }
  }

  private mutating func parseNumber() throws(SyntaxError) -> String {
    let start = index
    func digits(_ parser: inout JSONParser) -> Int {
      let from = parser.index
      while parser.index < parser.bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(parser.bytes[parser.index]) {
        parser.index += 1
      }
      return parser.index - from
    }
    if bytes[index] == UInt8(ascii: "-") { index += 1 }
    let integerStart = index
    let integerDigits = digits(&self)
    guard integerDigits > 0 else { throw error("expected a digit") }
    guard integerDigits == 1 || bytes[integerStart] != UInt8(ascii: "0") else {
      throw SyntaxError(message: "leading zero", offset: integerStart)
    }
    if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
      index += 1
      guard digits(&self) > 0 else { throw error("expected a digit after '.'") }
    }
    if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
      index += 1
      if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
      guard digits(&self) > 0 else { throw error("expected a digit in the exponent") }
    }
    return String(decoding: bytes[start..<index], as: UTF8.self)
  }

  private mutating func parseString() throws(SyntaxError) -> String {
    index += 1
    var utf8: [UInt8] = []
    while true {
      guard index < bytes.count else { throw error("unterminated string") }
      let byte = bytes[index]
      switch byte {
      case UInt8(ascii: "\""):
        index += 1
        guard let string = String(validating: utf8, as: UTF8.self) else { throw error("string is not valid UTF-8") }
        return string
      case UInt8(ascii: "\\"):
        index += 1
        guard index < bytes.count else { throw error("unterminated escape") }
        let escape = bytes[index]
        index += 1
        switch escape {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escape)
        case UInt8(ascii: "b"): utf8.append(0x08)
        case UInt8(ascii: "f"): utf8.append(0x0C)
        case UInt8(ascii: "n"): utf8.append(0x0A)
        case UInt8(ascii: "r"): utf8.append(0x0D)
        case UInt8(ascii: "t"): utf8.append(0x09)
        case UInt8(ascii: "u"): utf8.append(contentsOf: try parseUnicodeEscape())
        default: throw error("invalid escape")
        }
      case 0x00..<0x20:
        throw error("control character in a string")
      default:
        utf8.append(byte)
        index += 1
      }
    }
  }

  private mutating func parseHex4() throws(SyntaxError) -> UInt32 {
    guard bytes.count - index >= 4,
      let value = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16)
    else { throw error("expected four hex digits") }
    index += 4
    return value
  }

  private mutating func parseUnicodeEscape() throws(SyntaxError) -> [UInt8] {
    var scalar = try parseHex4()
    if (0xD800..<0xDC00).contains(scalar) {
      guard bytes.count - index >= 2, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
        throw error("unpaired surrogate")
      }
      index += 2
      let low = try parseHex4()
      guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate") }
      scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
    } else if (0xDC00..<0xE000).contains(scalar) {
      throw error("unpaired surrogate")
    }
    guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid code point") }
    return Array(String(Character(unicode)).utf8)
  }
}
