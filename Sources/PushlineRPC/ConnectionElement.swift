/// What travels on a connection in either direction: each peer's preface once, first, then
/// frames.
public enum ConnectionElement: Hashable, Sendable {
  case preface(ConnectionPreface)
  case frame(Frame)
  /// A whole message in one MESSAGE frame, held as its parts: the frame's payload is the
  /// compressed flag, then `bytes`. The form a sender writes a message that fits one frame in,
  /// so that its bytes are copied once, onto the wire, not first into a payload; what a
  /// receiver decodes is always a ``frame(_:)``.
  case message(callID: UInt32, compressed: Bool, bytes: [UInt8])

  /// The frame this element is on the wire; `nil` for a preface.
  public var frame: Frame? {
    switch self {
    case .preface: nil
    case .frame(let frame): frame
    case .message(let callID, let compressed, let bytes): Frame(kind: .message, callID: callID, payload: [compressed ? 1 : 0] + bytes)
    }
  }
}
