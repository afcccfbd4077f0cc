public import PushlineRPC

/// The rules for topic names, checked before a name reaches storage or authorization.
public enum TopicName {
  /// The longest name accepted, in bytes.
  public static let maxLength = 200

  /// Throws INVALID_ARGUMENT unless `name` is 1 to ``maxLength`` characters of `A–Z a–z 0–9`
  /// and `. _ - / :` — no wildcards (they belong to token claims), no spaces, nothing to escape.
  public static func validate(_ name: String) throws(RPCError) {
    let utf8 = name.utf8
    guard !utf8.isEmpty, utf8.count <= maxLength else {
      throw RPCError(code: .invalidArgument, message: "topic name must be 1 to \(maxLength) bytes, got \(utf8.count)")
    }
    for byte in utf8 where !isAllowed(byte) {
      throw RPCError(code: .invalidArgument, message: "topic name \"\(name)\" contains a character outside A-Z a-z 0-9 . _ - / :")
    }
  }

  private static func isAllowed(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
      UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "/"), UInt8(ascii: ":"):
      true
    default:
      false
    }
  }
}
