import NIOCore
import PushlineRPC

/// Encodes outbound prefaces and frames, the small ones of a flush back to back in one buffer.
///
/// The connection handlers gather a burst's frames themselves (``FlushCoalescer``) and hand them
/// down as encoded frames; what reaches this handler besides is a preface, a write with a promise,
/// a large frame, or a frame another handler writes (the idle handler's PING and GOAWAY). Each
/// would otherwise get a buffer of its own: two allocations, a queue entry and an iovec each (a
/// connection's preface and handshake, for one). Small elements are appended to a pending buffer
/// that goes down the pipeline at the flush, at a write that carries a promise, or once it holds
/// ``batchLimit`` bytes, so that the channel's writability still sees a busy connection's bytes and
/// the buffer stays small. A frame of ``batchLimit`` bytes or more goes in a buffer of its own
/// exact size (after what is pending), so that one large message does not leave a large buffer
/// behind for the small ones that follow it.
final class FrameEncodingHandler: ChannelOutboundHandler {
  typealias OutboundIn = ConnectionElement
  typealias OutboundOut = ByteBuffer

  /// The bytes a pending buffer holds at most before it goes down the pipeline.
  static let batchLimit = 16 << 10

  /// The frames written since the last flush, not yet passed down.
  private var pending: ByteBuffer?
  /// The channel's allocator, looked up once rather than through the context (pipeline,
  /// channel, reference counts) on every write.
  private var allocator = ByteBufferAllocator()

  func handlerAdded(context: ChannelHandlerContext) {
    allocator = context.channel.allocator
  }

  func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
    let element = unwrapOutboundIn(data)
    let size: Int
    switch element {
    case .preface: size = ConnectionPreface.size
    case .frame(let frame): size = FrameHeader.size + frame.payload.count
    case .message(_, _, let bytes): size = FrameHeader.size + 1 + bytes.count
    case .encodedFrames(let bytes): size = bytes.count
    }
    guard size < Self.batchLimit else {
      writePending(context: context)
      var buffer = allocator.buffer(capacity: size)
      FrameEncoder().encode(data: element, out: &buffer)
      return context.write(wrapOutboundOut(buffer), promise: promise)
    }
    // Sized for the first frame and grown as frames join it: a buffer passed down holds at most
    // twice its bytes, however few frames it carries (a slow reader's queue stays small).
    var buffer = pending ?? allocator.buffer(capacity: size)
    pending = nil  // held once while it grows
    FrameEncoder().encode(data: element, out: &buffer)
    if promise == nil, buffer.readableBytes < Self.batchLimit {
      pending = buffer
    } else {
      context.write(wrapOutboundOut(buffer), promise: promise)
    }
  }

  func flush(context: ChannelHandlerContext) {
    writePending(context: context)
    context.flush()
  }

  /// Passes the pending frames down the pipeline, if any.
  private func writePending(context: ChannelHandlerContext) {
    guard let buffer = pending else { return }
    pending = nil
    context.write(wrapOutboundOut(buffer), promise: nil)
  }
}

@available(*, unavailable)
extension FrameEncodingHandler: Sendable {}
