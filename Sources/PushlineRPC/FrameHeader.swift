/// The nine bytes in front of every frame: payload length (24 bits), kind, flags, call id
/// (31 bits), all big-endian.
///
/// ```
/// +-----------------------------------------------+
/// |                 Length (24)                   |
/// +---------------+---------------+---------------+
/// |   Kind (8)    |   Flags (8)   |
/// +-+-------------+---------------+-------------------------------+
/// |R|                       Call ID (31)                          |
/// +-+-------------------------------------------------------------+
/// ```
public struct FrameHeader: Hashable, Sendable {
  /// The header's size on the wire.
  public static let size = 9
  /// The largest payload a 24-bit length can describe.
  public static let maxPayloadLength = (1 << 24) - 1

  /// The payload's length in bytes.
  public var payloadLength: Int
  public var kind: FrameKind
  /// Reserved in version 1: sent as zero, ignored on receipt.
  public var flags: UInt8
  /// The call the frame belongs to; 0 for connection-level frames.
  public var callID: UInt32

  /// A header; `payloadLength` must fit in 24 bits and `callID` in 31.
  public init(payloadLength: Int, kind: FrameKind, flags: UInt8 = 0, callID: UInt32) {
    precondition((0...Self.maxPayloadLength).contains(payloadLength), "payload length must fit in 24 bits")
    precondition(callID <= Int32.max, "call ids are 31 bits")
    self.payloadLength = payloadLength
    self.kind = kind
    self.flags = flags
    self.callID = callID
  }

  /// Parses the first nine bytes of `bytes`, which must hold at least that many.
  ///
  /// - Throws: ``ProtocolViolation`` if the reserved bit of the call id is set.
  public init(parsing bytes: UnsafeRawBufferPointer) throws(ProtocolViolation) {
    precondition(bytes.count >= Self.size, "a frame header is nine bytes")
    payloadLength = Int(bytes[0]) << 16 | Int(bytes[1]) << 8 | Int(bytes[2])
    kind = FrameKind(rawValue: bytes[3])
    flags = bytes[4]
    let rawCallID = UInt32(bytes[5]) << 24 | UInt32(bytes[6]) << 16 | UInt32(bytes[7]) << 8 | UInt32(bytes[8])
    guard rawCallID & 0x8000_0000 == 0 else {
      throw ProtocolViolation(.reservedBitSet, "the reserved bit of the call id is set")
    }
    callID = rawCallID
  }

  /// Appends the header's nine bytes to `bytes` (a burst of frames gathered in one buffer).
  @inlinable
  public func append(to bytes: inout [UInt8]) {
    bytes.append(UInt8(truncatingIfNeeded: payloadLength >> 16))
    bytes.append(UInt8(truncatingIfNeeded: payloadLength >> 8))
    bytes.append(UInt8(truncatingIfNeeded: payloadLength))
    bytes.append(kind.rawValue)
    bytes.append(flags)
    bytes.append(UInt8(truncatingIfNeeded: callID >> 24))
    bytes.append(UInt8(truncatingIfNeeded: callID >> 16))
    bytes.append(UInt8(truncatingIfNeeded: callID >> 8))
    bytes.append(UInt8(truncatingIfNeeded: callID))
  }

  /// The header's nine bytes.
  public var bytes: [UInt8] {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(Self.size)
    append(to: &bytes)
    return bytes
  }
}
