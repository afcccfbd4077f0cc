/// What a frame carries. An extensible set of values: a receiver ignores kinds it does not
/// know, so later versions can add frames without breaking older peers.
public struct FrameKind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  public var rawValue: UInt8

  public init(rawValue: UInt8) { self.rawValue = rawValue }

  /// Connection setup (call id 0): a `ClientHello` or `ServerHello`.
  public static let handshake = FrameKind(rawValue: 0x0)
  /// Opens a call: a `CallStart`.
  public static let callStart = FrameKind(rawValue: 0x1)
  /// One message of a call: a compressed flag byte, then the message bytes.
  public static let message = FrameKind(rawValue: 0x2)
  /// The sender will send no more messages on the call. Empty.
  public static let halfClose = FrameKind(rawValue: 0x3)
  /// Ends a call (server to client): a `CallStatus`.
  public static let status = FrameKind(rawValue: 0x4)
  /// Abandons a call (client to server). Empty.
  public static let cancel = FrameKind(rawValue: 0x5)
  /// Liveness probe (call id 0): eight opaque bytes.
  public static let ping = FrameKind(rawValue: 0x6)
  /// Answer to a ping (call id 0): the ping's eight bytes.
  public static let pong = FrameKind(rawValue: 0x7)
  /// No new calls (call id 0): a `GoAway`.
  public static let goAway = FrameKind(rawValue: 0x8)

  /// The kind's name, or its number for a kind this version does not define.
  public var description: String {
    switch self {
    case .handshake: "HANDSHAKE"
    case .callStart: "CALL_START"
    case .message: "MESSAGE"
    case .halfClose: "HALF_CLOSE"
    case .status: "STATUS"
    case .cancel: "CANCEL"
    case .ping: "PING"
    case .pong: "PONG"
    case .goAway: "GOAWAY"
    default: "UNKNOWN(0x\(String(rawValue, radix: 16)))"
    }
  }

  /// Whether this version of the protocol defines the kind.
  public var isKnown: Bool { rawValue <= FrameKind.goAway.rawValue }
}
