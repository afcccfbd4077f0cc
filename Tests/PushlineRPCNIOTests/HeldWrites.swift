import NIOCore
import PushlineRPC

/// Writes that never leave — a peer that reads nothing, its connection's buffers full: what is
/// written through this handler goes no further, and its promise waits until the channel closes.
final class HeldWrites: ChannelOutboundHandler {
  typealias OutboundIn = ConnectionElement

  private var promises: [EventLoopPromise<Void>] = []
  /// How many writes it holds.
  var count: Int { promises.count }

  func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
    if let promise { promises.append(promise) }
  }

  func flush(context: ChannelHandlerContext) {}

  func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
    if mode == .all {
      let held = promises
      promises = []
      for promise in held { promise.fail(ChannelError.ioOnClosedChannel) }
    }
    context.close(mode: mode, promise: promise)
  }
}
