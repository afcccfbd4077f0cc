import NIOCore

/// Counts the flushes and reads that reach the head of a pipeline (it sits first), passing
/// everything on: what a test checks the handlers above it do with them.
final class OutboundEventCounter<Element>: ChannelOutboundHandler {
  typealias OutboundIn = Element
  var flushes = 0
  var reads = 0

  func flush(context: ChannelHandlerContext) {
    flushes += 1
    context.flush()
  }

  func read(context: ChannelHandlerContext) {
    reads += 1
    context.read()
  }
}
