import NIOCore
import PushlineRPC

/// Encodes each outbound preface or frame into a buffer of its own exact size.
///
/// Unlike `MessageToByteHandler`, which reuses one buffer and so, while the previous frame is
/// still queued in the channel, allocates a copy as large as the largest frame it ever wrote,
/// every frame costs exactly its bytes: after one large message, the small ones that follow
/// it while the channel is busy stay small.
final class FrameEncodingHandler: ChannelOutboundHandler {
  typealias OutboundIn = ConnectionElement
  typealias OutboundOut = ByteBuffer

  func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
    let element = unwrapOutboundIn(data)
    let size: Int
    switch element {
    case .preface: size = ConnectionPreface.size
    case .frame(let frame): size = FrameHeader.size + frame.payload.count
    }
    var buffer = context.channel.allocator.buffer(capacity: size)
    FrameEncoder().encode(data: element, out: &buffer)
    context.write(wrapOutboundOut(buffer), promise: promise)
  }
}

@available(*, unavailable)
extension FrameEncodingHandler: Sendable {}
