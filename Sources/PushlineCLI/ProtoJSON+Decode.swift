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

  private static func base64(_ text: String) -> [UInt8]? {
    var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    if standard.count % 4 != 0 { standard += String(repeating: "=", count: 4 - standard.count % 4) }
    return Data(base64Encoded: standard).map { [UInt8]($0) }
  }
}
