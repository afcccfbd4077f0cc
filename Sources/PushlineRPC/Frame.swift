/// One frame of a Pushline connection: a header's kind, flags and call id, and its payload.
public struct Frame: Hashable, Sendable {
  public var kind: FrameKind
  /// Reserved in version 1: zero.
  public var flags: UInt8
  /// The call the frame belongs to; 0 for connection-level frames.
  public var callID: UInt32
  public var payload: [UInt8]

  /// A frame; the payload must be shorter than 2^24 bytes.
  public init(kind: FrameKind, flags: UInt8 = 0, callID: UInt32, payload: [UInt8] = []) {
    self.kind = kind
    self.flags = flags
    self.callID = callID
    self.payload = payload
  }

  /// The header that precedes the payload on the wire.
  public var header: FrameHeader {
    FrameHeader(payloadLength: payload.count, kind: kind, flags: flags, callID: callID)
  }

  /// The frame's bytes on the wire: header, then payload.
  public var bytes: [UInt8] { header.bytes + payload }
}
