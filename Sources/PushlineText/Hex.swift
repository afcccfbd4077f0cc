/// Hexadecimal text for bytes, as `dump` reads and prints it.
public enum Hex {
  /// Lowercase hex, bytes joined by `separator`.
  public static func encode(_ bytes: [UInt8], separator: String = "") -> String {
    bytes.map { byte in
      let digits = String(byte, radix: 16)
      return byte < 0x10 ? "0" + digits : digits
    }.joined(separator: separator)
  }

  /// Bytes from hex text; white space and `:` between digits are ignored, and an optional
  /// `0x` prefix. `nil` for an odd number of digits or a character that is not a hex digit.
  public static func decode(_ text: String) -> [UInt8]? {
    var body = Substring(text)
    if body.hasPrefix("0x") || body.hasPrefix("0X") { body = body.dropFirst(2) }
    var bytes: [UInt8] = []
    var high: UInt8?
    for character in body where !character.isWhitespace && character != ":" {
      guard let digit = character.hexDigitValue else { return nil }
      if let pending = high {
        bytes.append(pending << 4 | UInt8(digit))
        high = nil
      } else {
        high = UInt8(digit)
      }
    }
    return high == nil ? bytes : nil
  }
}
