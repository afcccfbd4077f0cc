public import PushlineSchema

/// Protobuf's canonical JSON mapping for the schema's messages: lowerCamelCase names,
/// 64-bit integers as strings, enums by name, bytes as base64, non-finite floats as
/// `"NaN"`/`"Infinity"`/`"-Infinity"`. Only present fields are printed (proto2 presence).
///
/// Unknown fields have no JSON form and are dropped, as in every protobuf implementation;
/// `pushline dump` without `--json` shows them.
public enum ProtoJSON {
  /// Why a JSON document does not map to a message, and where in it.
  public struct MappingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The JSON path of the offending value, for example `payload.trackerRecentTripsCard.title`.
    public var path: String
    /// What is wrong.
    public var message: String

    public var description: String { path.isEmpty ? message : "\(path): \(message)" }
  }

  /// The message as a JSON document; `pretty` indents by two spaces, one field per line.
  public static func encode(_ message: any ReflectableMessage, pretty: Bool = false) -> String {
    var output = ""
    write(message, to: &output, indent: pretty ? "" : nil)
    return output
  }

  /// Parses `text` and maps it to a message of `type`, requiring its required fields.
  public static func decode(_ type: any ReflectableMessage.Type, from text: String) throws -> any ReflectableMessage {
    let document = try JSONParser.parse(text)
    return try decode(type, from: document, path: "")
  }
}
