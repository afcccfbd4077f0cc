package import NIOCore
package import PushlineRPC

/// Splits a connection's inbound bytes into the peer's preface and then frames, one element at
/// a time (``FrameDecodingHandler`` drives it on a channel).
///
/// Total: with too few bytes it waits and leaves the reader index alone; a length is checked
/// against the limit as soon as the header arrives, before any of the payload is awaited or
/// buffered, so a peer cannot make it hold more than `maxPayloadLength` bytes for one frame.
/// Bytes that cannot be the preface are rejected at the first one that differs. Frames of kinds
/// this version does not know are passed on, so the connection can ignore them (forward
/// compatibility).
package struct FrameDecoder {
  private var awaitingPreface: Bool
  private let maxPayloadLength: Int

  /// A decoder that accepts frame payloads up to `maxPayloadLength` bytes (the limit this
  /// side announced), expecting the peer's preface first unless `expectingPreface` is false.
  package init(maxPayloadLength: Int, expectingPreface: Bool = true) {
    self.maxPayloadLength = min(maxPayloadLength, FrameHeader.maxPayloadLength)
    awaitingPreface = expectingPreface
  }

  /// Reads one preface or frame, or returns `nil` (reading nothing) when more bytes are needed.
  package mutating func decodeElement(from buffer: inout ByteBuffer) throws(ProtocolViolation) -> ConnectionElement? {
    if awaitingPreface {
      let available = buffer.readableBytesView.prefix(ConnectionPreface.magic.count)
      guard available.elementsEqual(ConnectionPreface.magic.prefix(available.count)) else {
        throw ProtocolViolation(.badPreface, "the connection does not start with PUSHLINE")
      }
      guard buffer.readableBytes >= ConnectionPreface.size else { return nil }
      let preface = try buffer.withUnsafeReadableBytes { bytes throws(ProtocolViolation) in try ConnectionPreface(parsing: bytes) }
      buffer.moveReaderIndex(forwardBy: ConnectionPreface.size)
      awaitingPreface = false
      return .preface(preface)
    }
    guard buffer.readableBytes >= FrameHeader.size else { return nil }
    let header = try buffer.withUnsafeReadableBytes { bytes throws(ProtocolViolation) in try FrameHeader(parsing: bytes) }
    guard header.payloadLength <= maxPayloadLength else {
      throw ProtocolViolation(
        .frameTooLarge, "\(header.kind) frame of \(header.payloadLength) bytes, limit \(maxPayloadLength)")
    }
    guard buffer.readableBytes >= FrameHeader.size + header.payloadLength else { return nil }
    buffer.moveReaderIndex(forwardBy: FrameHeader.size)
    let payload = buffer.readBytes(length: header.payloadLength)!
    return .frame(Frame(kind: header.kind, flags: header.flags, callID: header.callID, payload: payload))
  }
}
