/// The messages of STATUS and GOAWAY frames are for people and logs. A message may name what
/// a peer sent (an unknown method, a topic), so each is cut to at most ``maxBytes`` bytes of
/// UTF-8, never inside a character's encoding: no message can make its frame larger than the smallest
/// frame a connection may agree on (16 KiB).
enum StatusMessage {
  /// The longest message sent, in bytes of UTF-8.
  static let maxBytes = 1_024

  /// `message`, cut to ``maxBytes`` with an ellipsis when longer.
  static func fitted(_ message: String) -> String {
    guard message.utf8.count > maxBytes else { return message }
    let ellipsis = "…"
    var end = message.utf8.index(message.utf8.startIndex, offsetBy: maxBytes - ellipsis.utf8.count)
    while end.samePosition(in: message.unicodeScalars) == nil { end = message.utf8.index(before: end) }
    return String(message[..<end]) + ellipsis
  }
}
