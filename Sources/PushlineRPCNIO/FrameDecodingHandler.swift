public import NIOCore
public import PushlineRPC

/// Splits a connection's inbound bytes into the peer's preface and frames (``FrameDecoder``),
/// passing each on as a ``ConnectionElement``.
///
/// It does what NIO's `ByteToMessageHandler` would, for the one decoder it drives, in a plain
/// loop over each read's bytes: a publisher's read of thousands of frames pays for no buffer
/// queue, closure or state change per frame. The bytes of an element not yet whole are kept,
/// copied out of the read's buffer (so that the channel's pooled receive buffer is reused
/// rather than pinned), and joined by the next read's.
///
/// The first error — a ``ProtocolViolation`` — goes down the pipeline, where the connection
/// answers with a GOAWAY and closes; the bytes after it are dropped unread. Once the channel is
/// inactive nothing more is passed on, and an element cut short by the end of the connection is
/// dropped with it.
public final class FrameDecodingHandler: ChannelInboundHandler {
  public typealias InboundIn = ByteBuffer
  public typealias InboundOut = ConnectionElement

  private var decoder: FrameDecoder
  /// Bytes not decoded yet: an element's beginning, and what arrives while a read is being
  /// decoded (a handler further on reading more in reply).
  private var undecoded: ByteBuffer?
  private var isDecoding = false
  private var hasFailed = false
  private var isInactive = false

  /// A handler that accepts frame payloads up to `maxPayloadLength` bytes (the limit this side
  /// announced), expecting the peer's preface first unless `expectingPreface` is false.
  public init(maxPayloadLength: Int, expectingPreface: Bool = true) {
    decoder = FrameDecoder(maxPayloadLength: maxPayloadLength, expectingPreface: expectingPreface)
  }

  public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    guard !hasFailed else { return }
    var bytes = unwrapInboundIn(data)
    var isKept = false
    if var kept = undecoded {
      undecoded = nil  // held once while it grows
      kept.writeBuffer(&bytes)
      (bytes, isKept) = (kept, true)
    }
    guard !isDecoding else {
      undecoded = bytes  // the read under way decodes them after its own
      return
    }
    isDecoding = true
    defer { isDecoding = false }
    decode(&bytes, isKept: isKept, context: context)
  }

  public func channelInactive(context: ChannelHandlerContext) {
    isInactive = true
    undecoded = nil
    context.fireChannelInactive()
  }

  /// Passes on every whole element in `bytes` and in what arrives meanwhile, then keeps the
  /// rest: in `bytes` itself when they are already this handler's (`isKept`: an element growing
  /// over many reads is not copied again at each) and it is not much larger than they need, in
  /// a buffer of their size otherwise.
  private func decode(_ bytes: inout ByteBuffer, isKept: Bool, context: ChannelHandlerContext) {
    var isKept = isKept
    do {
      while !isInactive {
        while !isInactive, let element = try decoder.decodeElement(from: &bytes) {
          context.fireChannelRead(wrapInboundOut(element))
        }
        guard var arrived = undecoded else { break }
        undecoded = nil
        bytes.writeBuffer(&arrived)  // a buffer of this handler's from here on
        isKept = true
      }
    } catch {
      hasFailed = true
      undecoded = nil
      return context.fireErrorCaught(error)
    }
    guard !isInactive, bytes.readableBytes > 0 else { return }
    if isKept, bytes.capacity <= 4 * max(bytes.readableBytes, Self.keptCapacity) {
      bytes.discardReadBytes()
      undecoded = bytes
    } else {
      var kept = context.channel.allocator.buffer(capacity: bytes.readableBytes)
      kept.writeBuffer(&bytes)
      undecoded = kept
    }
  }

  /// A kept buffer up to this size is reused for what follows, whatever it holds.
  private static let keptCapacity = 64 << 10
}

@available(*, unavailable)
extension FrameDecodingHandler: Sendable {}
