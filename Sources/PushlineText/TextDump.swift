public import PushlineSchema
import PushlineWire

/// A readable rendering of a message for people: one field per line, sub-messages indented,
/// unknown fields shown by number and wire type with their raw values.
///
/// ```
/// cardID: "card-1"
/// payload {
///   trackerRecentTripsCard {
///     title: "Last trip"
///   }
/// }
/// 100: VARINT 7    # unknown
/// ```
public enum TextDump {
  /// The message's text form, ending with a newline.
  public static func render(_ message: any ReflectableMessage) -> String {
    var output = ""
    write(message, indent: "", to: &output)
    return output
  }

  private static func write(_ message: any ReflectableMessage, indent: String, to output: inout String) {
    for (field, values) in message.presentFields {
      for value in values {
        if case .message(let sub) = value {
          output += "\(indent)\(field.name) {\n"
          write(sub, indent: indent + "  ", to: &output)
          output += "\(indent)}\n"
        } else {
          output += "\(indent)\(field.name): \(scalar(value, type: field.type))\n"
        }
      }
    }
    UnknownFieldsDump.write(message.unknownFields.bytes, indent: indent, to: &output)
  }

  private static func scalar(_ value: FieldValue, type: FieldType) -> String {
    switch value {
    case .double(let number): number.description
    case .float(let number): number.description
    case .int64(let number): number.description
    case .uint32(let number): number.description
    case .bool(let flag): flag ? "true" : "false"
    case .string(let string): ProtoJSON.quoted(string)
    case .bytes(let bytes): "<\(bytes.count) bytes> \(Hex.encode(bytes, separator: " "))"
    case .enumeration(let number):
      if case .enumeration(let descriptor) = type, let name = descriptor.name(of: number) { name } else { number.description }
    case .message: "{…}"
    }
  }
}
