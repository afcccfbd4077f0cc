import NIOCore

/// Records what is passed down the pipeline as it is written, flushed or not.
final class PassedDown<Element>: ChannelOutboundHandler {
  typealias OutboundIn = Element
  var elements: [Element] = []

  func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
    elements.append(unwrapOutboundIn(data))
    context.write(data, promise: promise)
  }

  /// What was passed down since the last call.
  func take() -> [Element] {
    defer { elements = [] }
    return elements
  }
}
