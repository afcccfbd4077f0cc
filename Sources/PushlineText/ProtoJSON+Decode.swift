import Foundation
public import PushlineSchema
import PushlineWire

extension ProtoJSON {
  /// Maps a parsed JSON object to a message of `type`. Accepts what protobuf's JSON parsers
  /// accept: numbers or strings for numeric fields, enum names or numbers, `null` as absent,
  /// standard or URL-safe base64 with or without padding.
  public static func decode<M: ReflectableMessage>(_ type: M.Type, from json: JSONValue, path: String = "")
    throws(MappingError) -> M
  {
    let message = try decodeFields(type, from: json, path: path)
    if let missing = message.missingRequiredField {
      throw MappingError(path: path, message: "missing required field \(missing)")
    }
    return message
  }

  private static func decodeFields<M: ReflectableMessage>(_ type: M.Type, from json: JSONValue, path: String)
    throws(MappingError) -> M
  {
    guard case .object(let members) = json else { throw MappingError(path: path, message: "expected an object") }
    var message = M()
    for (key, value) in members {
      let fieldPath = path.isEmpty ? key : "\(path).\(key)"
      guard let field = M.anyFields.first(where: { $0.name == key }) else {
        throw MappingError(path: fieldPath, message: "\(M.protoName) has no field named \"\(key)\"")
      }
      var values: [FieldValue]
      if case .null = value {
        values = []
      } else if field.label == .repeated {
        guard case .array(let elements) = value else { throw MappingError(path: fieldPath, message: "expected an array") }
        values = []
        for (index, element) in elements.enumerated() {
          values.append(try decodeValue(element, type: field.type, path: "\(fieldPath)[\(index)]"))
        }
      } else {
        values = [try decodeValue(value, type: field.type, path: fieldPath)]
      }
      guard message.setField(number: field.number, to: values) else {
        throw MappingError(path: fieldPath, message: "value does not fit the field")
      }
    }
    return message
  }

  private static func decodeValue(_ json: JSONValue, type: FieldType, path: String) throws(MappingError) -> FieldValue {
    func fail(_ message: String) -> MappingError { MappingError(path: path, message: message) }
    switch type {
    case .double:
      return .double(try floatingPoint(json, as: Double.self, path: path))
    case .float:
      // Parsed straight to Float: going through Double would round twice.
      return .float(try floatingPoint(json, as: Float.self, path: path))
    case .int64, .sint64:
      guard let value = Int64(exactly: try integer(json, path: path)) else { throw fail("out of range for int64") }
      return .int64(value)
    case .uint32:
      guard let value = UInt32(exactly: try integer(json, path: path)) else { throw fail("out of range for uint32") }
      return .uint32(value)
    case .bool:
      guard case .bool(let flag) = json else { throw fail("expected true or false") }
      return .bool(flag)
    case .string:
      guard case .string(let string) = json else { throw fail("expected a string") }
      return .string(string)
    case .bytes:
      guard case .string(let text) = json, let bytes = base64(text) else { throw fail("expected base64") }
      return .bytes(bytes)
    case .enumeration(let descriptor):
      switch json {
      case .string(let name):
        guard let number = descriptor.number(named: name) else { throw fail("\(descriptor.name) has no value \(name)") }
        return .enumeration(number)
      case .number:
        guard let number = Int32(exactly: try integer(json, path: path)), descriptor.name(of: number) != nil else {
          throw fail("\(descriptor.name) has no such number")
        }
        return .enumeration(number)
      default:
        throw fail("expected an enum name")
      }
    case .message(let messageType):
      return .message(try decode(messageType, from: json, path: path))
    }
  }

  private static func floatingPoint<F: BinaryFloatingPoint & LosslessStringConvertible>(
    _ json: JSONValue, as: F.Type, path: String
  ) throws(MappingError) -> F {
    switch json {
    case .number(let text):
      guard let value = F(text), value.isFinite else { throw MappingError(path: path, message: "number out of range") }
      return value
    case .string("NaN"): return .nan
    case .string("Infinity"): return .infinity
    case .string("-Infinity"): return -.infinity
    case .string(let text):
      guard let value = F(text), value.isFinite, text.first != "+" else {
        throw MappingError(path: path, message: "expected a number")
      }
      return value
    default:
      throw MappingError(path: path, message: "expected a number")
    }
  }

  /// An integer written as an integer literal, an exponent form with an integral value, or a
  /// string holding either; wide enough for uint64 and int64.
  private static func integer(_ json: JSONValue, path: String) throws(MappingError) -> Int128 {
    let text: String
    switch json {
    case .number(let literal): text = literal
    case .string(let literal) where !literal.isEmpty && literal.first != "+": text = literal
    default: throw MappingError(path: path, message: "expected an integer")
    }
    if let value = Int128(text) { return value }
    guard let value = Double(text), value.rounded() == value, let exact = Int128(exactly: value) else {
      throw MappingError(path: path, message: "expected an integer, got \(text)")
    }
    return exact
  }

  /// The bytes of proto3 JSON's base64: the standard or the URL-safe alphabet, padded or not.
  /// Decoded here rather than by Foundation, which on Linux takes padding in the middle
  /// (`"AQ=B"`) and returns bytes no encoder wrote: padding may only end the text, making it a
  /// whole number of 4-character groups, and the alphabets may not be mixed within a text.
  private static func base64(_ text: String) -> [UInt8]? {
    var digits = Array(text.utf8)
    let padding = digits.reversed().prefix { $0 == UInt8(ascii: "=") }.count
    guard padding <= 2, padding == 0 || digits.count % 4 == 0 else { return nil }
    digits.removeLast(padding)
    guard digits.count % 4 != 1 else { return nil }  // one digit is 6 bits: no whole byte
    let urlSafe = digits.contains { $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(digits.count * 3 / 4)
    var bits: UInt32 = 0
    var bitCount = 0
    for digit in digits {
      guard let value = base64Value(digit, urlSafe: urlSafe) else { return nil }
      bits = bits << 6 | UInt32(value)
      bitCount += 6
      if bitCount >= 8 {
        bitCount -= 8
        bytes.append(UInt8(truncatingIfNeeded: bits >> UInt32(bitCount)))
      }
    }
    return bytes
  }

  /// The 6 bits a base64 digit stands for, in the standard alphabet or the URL-safe one.
  private static func base64Value(_ digit: UInt8, urlSafe: Bool) -> UInt8? {
    switch digit {
    case UInt8(ascii: "A")...UInt8(ascii: "Z"): digit - UInt8(ascii: "A")
    case UInt8(ascii: "a")...UInt8(ascii: "z"): digit - UInt8(ascii: "a") + 26
    case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0") + 52
    case UInt8(ascii: "+") where !urlSafe, UInt8(ascii: "-") where urlSafe: 62
    case UInt8(ascii: "/") where !urlSafe, UInt8(ascii: "_") where urlSafe: 63
    default: nil
    }
  }
}
