import Foundation
import PushlineSchema

extension ProtoJSON {
  /// Appends `message` as a JSON object. `indent` is the current indentation when pretty
  /// printing, `nil` for compact output.
  static func write(_ message: any ReflectableMessage, to output: inout String, indent: String?) {
    let fields = message.presentFields
    guard !fields.isEmpty else {
      output += "{}"
      return
    }
    let inner = indent.map { $0 + "  " }
    output += "{"
    for (index, (field, values)) in fields.enumerated() {
      if index > 0 { output += "," }
      if let inner { output += "\n" + inner }
      output += quoted(field.name) + (indent == nil ? ":" : ": ")
      if field.label == .repeated {
        output += "["
        for (position, value) in values.enumerated() {
          if position > 0 { output += indent == nil ? "," : ", " }
          write(value, type: field.type, to: &output, indent: inner)
        }
        output += "]"
      } else {
        write(values[0], type: field.type, to: &output, indent: inner)
      }
    }
    if let indent { output += "\n" + indent }
    output += "}"
  }

  private static func write(_ value: FieldValue, type: FieldType, to output: inout String, indent: String?) {
    switch value {
    case .double(let number): output += format(number)
    case .float(let number): output += number.isFinite ? number.description : format(Double(number))
    case .int64(let number): output += "\"\(number)\""
    case .uint32(let number): output += number.description
    case .bool(let flag): output += flag ? "true" : "false"
    case .string(let string): output += quoted(string)
    case .bytes(let bytes): output += "\"" + Data(bytes).base64EncodedString() + "\""
    case .enumeration(let number):
      if case .enumeration(let descriptor) = type, let name = descriptor.name(of: number) {
        output += quoted(name)
      } else {
        output += number.description
      }
    case .message(let message): write(message, to: &output, indent: indent)
    }
  }

  private static func format(_ number: Double) -> String {
    if number.isNaN { return "\"NaN\"" }
    if number.isInfinite { return number < 0 ? "\"-Infinity\"" : "\"Infinity\"" }
    return number.description
  }

  /// A JSON string literal: quotes, backslashes and control characters escaped.
  static func quoted(_ string: String) -> String {
    var result = "\""
    for scalar in string.unicodeScalars {
      switch scalar {
      case "\"": result += "\\\""
      case "\\": result += "\\\\"
      case "\n": result += "\\n"
      case "\r": result += "\\r"
      case "\t": result += "\\t"
      case "\u{08}": result += "\\b"
      case "\u{0C}": result += "\\f"
      case "\u{00}"..."\u{1F}", "\u{7F}":
        let hex = String(scalar.value, radix: 16)
        result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
      default: result.unicodeScalars.append(scalar)
      }
    }
    return result + "\""
  }
}
