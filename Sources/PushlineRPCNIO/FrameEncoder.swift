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
      out.writeBytes(frame.header.bytes)
      out.writeBytes(frame.payload)
    }
  }
}
