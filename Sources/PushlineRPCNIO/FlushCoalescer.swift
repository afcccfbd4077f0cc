import NIOCore

/// Writes a connection handler's frames without flushing each one, and flushes once per burst.
///
/// A flush is a system call, so its count, not the frames', decides what a busy connection
/// costs. Writes made while the handler is reading (answers to the frames read) are flushed
/// together when the read burst completes; writes made outside a read (call handlers'
/// responses) are flushed by one `EventLoop.execute` scheduled at the first of them, which runs
/// after every job already queued on the loop — so the responses of all the calls that ran in
/// one turn of the loop leave in one flush. ``flush()`` flushes at once (a streaming writer
/// whose writes filled the channel's buffer).
///
/// Used only on the event loop of the channel whose context it holds.
final class FlushCoalescer {
  private let context: ChannelHandlerContext
  private var isReading = false
  private var hasUnflushedWrites = false
  private var isFlushScheduled = false

  /// A coalescer writing through `context`.
  init(context: ChannelHandlerContext) {
    self.context = context
  }

  /// Writes `data` without flushing it; the flush follows by the end of the burst.
  func write(_ data: NIOAny, promise: EventLoopPromise<Void>? = nil) {
    context.write(data, promise: promise)
    hasUnflushedWrites = true
    guard !isReading, !isFlushScheduled else { return }
    isFlushScheduled = true
    let coalescer = NIOLoopBound(self, eventLoop: context.eventLoop)
    context.eventLoop.execute {
      coalescer.value.isFlushScheduled = false
      coalescer.value.flush()
    }
  }

  /// A read burst begins: writes wait for ``readCompleted()``.
  func readStarted() {
    isReading = true
  }

  /// The read burst is over: flush what it wrote.
  func readCompleted() {
    isReading = false
    flush()
  }

  /// Runs `writes` as one burst (a stream's responses pulled together): what they write leaves
  /// in one flush when they are done, or with the read burst they run in.
  func burst(_ writes: () -> Void) {
    let wasReading = isReading
    isReading = true
    writes()
    isReading = wasReading
    if !wasReading { flush() }
  }

  /// Writes `data`, flushes, and closes the channel once the last of it is written (a GOAWAY
  /// that must reach the peer before the close).
  func close(after data: [NIOAny]) {
    let channel = context.channel
    guard let last = data.last else { return channel.close(promise: nil) }
    for element in data.dropLast() { write(element) }
    let written = context.eventLoop.makePromise(of: Void.self)
    write(last, promise: written)
    flush()
    written.futureResult.whenComplete { _ in channel.close(promise: nil) }
  }

  /// Flushes the writes made so far, if any.
  func flush() {
    guard hasUnflushedWrites else { return }
    hasUnflushedWrites = false
    context.flush()
  }
}

@available(*, unavailable)
extension FlushCoalescer: Sendable {}
