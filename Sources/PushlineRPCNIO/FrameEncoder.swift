public import NIOCore
public import PushlineRPC

/// Writes prefaces and frames as bytes: a frame's nine-byte header, then its payload.
public struct FrameEncoder: MessageToByteEncoder {
  public typealias OutboundIn = ConnectionElement

  /// An encoder.
  public init() {}

  public func encode(data: ConnectionElement, out: inout ByteBuffer) {
    switch data {
    case .preface(let preface):
      out.writeBytes(preface.bytes)
    case .frame(let frame):
      write(frame.header, to: &out)
      out.writeBytes(frame.payload)
    case .message(let callID, let compressed, let bytes):
      write(FrameHeader(payloadLength: 1 + bytes.count, kind: .message, flags: 0, callID: callID), to: &out)
      out.writeInteger(compressed ? 1 : 0 as UInt8)
      out.writeBytes(bytes)
    case .encodedFrames(let bytes):
      out.writeBytes(bytes)
    }
  }

  /// Writes `header` with room for its payload after it. The fields are written in place
  /// (big-endian), with no array per frame; `FrameHeader` has checked that the length fits its
  /// 24 bits and the call id its 31.
  private func write(_ header: FrameHeader, to out: inout ByteBuffer) {
    out.reserveCapacity(minimumWritableBytes: FrameHeader.size + header.payloadLength)
    out.writeMultipleIntegers(
      UInt8(truncatingIfNeeded: header.payloadLength >> 16), UInt16(truncatingIfNeeded: header.payloadLength),
      header.kind.rawValue, header.flags, header.callID)
  }
}
