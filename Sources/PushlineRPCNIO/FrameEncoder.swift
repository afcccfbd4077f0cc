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
      out.reserveCapacity(minimumWritableBytes: FrameHeader.size + frame.payload.count)
      // The header's fields written in place (big-endian): no array per frame. `FrameHeader`
      // checks that the length fits its 24 bits and the call id its 31.
      let header = frame.header
      out.writeMultipleIntegers(
        UInt8(truncatingIfNeeded: header.payloadLength >> 16), UInt16(truncatingIfNeeded: header.payloadLength),
        header.kind.rawValue, header.flags, header.callID)
      out.writeBytes(frame.payload)
    }
  }
}
