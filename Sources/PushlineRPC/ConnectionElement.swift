/// What travels on a connection in either direction: each peer's preface once, first, then
/// frames.
public enum ConnectionElement: Hashable, Sendable {
  case preface(ConnectionPreface)
  case frame(Frame)
  /// A whole message in one MESSAGE frame, held as its parts: the frame's payload is the
  /// compressed flag, then `bytes`. The form a sender writes a message that fits one frame in,
  /// so that its bytes are not first copied into a payload; what a receiver decodes is always a
  /// ``frame(_:)``.
  case message(callID: UInt32, compressed: Bool, bytes: [UInt8])
  /// Whole frames already in their wire form, back to back: a sender's burst of messages
  /// gathered in one buffer (``FrameHeader/append(to:)``), so that its transport hands the
  /// burst on as one element and copies it once, not one element per message. What a receiver
  /// decodes is always a ``frame(_:)``.
  case encodedFrames([UInt8])

  /// The frame this element is on the wire, for an element that is one frame; `nil` for a
  /// preface and for encoded frames (see ``frames``).
  public var frame: Frame? {
    switch self {
    case .preface, .encodedFrames: nil
    case .frame(let frame): frame
    case .message(let callID, let compressed, let bytes): Frame(kind: .message, callID: callID, payload: [compressed ? 1 : 0] + bytes)
    }
  }

  /// The frames this element is on the wire: none for a preface. Encoded frames — which only a
  /// sender's own transport makes, and tests and transcripts read back — are parsed up to the
  /// first that is cut short or has a malformed header; the rest is dropped, not reported.
  public var frames: [Frame] {
    guard case .encodedFrames(let bytes) = self else { return frame.map { [$0] } ?? [] }
    var frames: [Frame] = []
    var start = 0
    while bytes.count - start >= FrameHeader.size {
      guard let header = try? bytes[start...].withUnsafeBytes({ try FrameHeader(parsing: $0) }) else { break }
      let end = start + FrameHeader.size + header.payloadLength
      guard end <= bytes.count else { break }
      frames.append(Frame(kind: header.kind, flags: header.flags, callID: header.callID, payload: Array(bytes[(start + FrameHeader.size)..<end])))
      start = end
    }
    return frames
  }
}
