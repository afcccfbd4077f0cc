import NIOCore
import PushlineRPC

/// Writes a connection handler's frames without flushing each one, and flushes once per burst;
/// the burst's frames go down the pipeline gathered, already encoded.
///
/// A flush is a system call, so its count, not the frames', decides what a busy connection
/// costs. Writes made while the handler is reading (answers to the frames read) are flushed
/// together when the read burst completes — or, when the burst started call handlers' tasks,
/// once those have run their first steps, so that a new subscriber's handshake answer and
/// first update leave together; writes made outside a read (call handlers' responses) are
/// flushed by one `EventLoop.execute` scheduled at the first of them, which runs after every
/// job already queued on the loop — so the responses of all the calls that ran in one turn of
/// the loop leave in one flush. ``flush()`` flushes at once (a streaming writer
/// whose writes filled the channel's buffer).
///
/// A frame is not handed to the pipeline on its own: going through each handler costs more
/// than its bytes do (a publisher's answers, a subscriber's updates are a few dozen to a few
/// hundred bytes each). It is appended to one buffer, which goes down as one
/// ``ConnectionElement/encodedFrames(_:)`` before any other element, at the flush, and once it
/// reaches ``FrameEncodingHandler/batchLimit`` bytes — so the channel's writability still sees
/// a busy connection's bytes (a pull's responses, encoded in place by ``writeEncoded(_:)``,
/// join together, and the limit is checked after them: a pull is bounded by its source). The
/// buffer is let go of at each flush: an idle connection keeps none.
///
/// Frames written outside a read wait in the buffer until the flush job runs: a frame another
/// handler writes below this one in between (the idle handler's GOAWAY before it closes a
/// connection that has sent nothing for a whole period) goes ahead of them.
///
/// Used only on the event loop of the channel whose context it holds.
final class FlushCoalescer {
  private let context: ChannelHandlerContext
  private var isReading = false
  private var hasUnflushedWrites = false
  private var isFlushScheduled = false
  /// A call handler's task started during the read burst: its first responses join the
  /// burst's flush.
  private var flushesAfterStartedTasks = false
  /// The frames written since the last element went down the pipeline.
  private var gathered: [UInt8] = []

  /// A coalescer writing through `context`.
  init(context: ChannelHandlerContext) {
    self.context = context
  }

  /// Writes `element` without flushing it; the flush follows by the end of the burst.
  func write(_ element: ConnectionElement, promise: EventLoopPromise<Void>? = nil) {
    if promise != nil || !gather(element) {
      writeGathered()
      context.write(NIOAny(element), promise: promise)
    } else if gathered.count >= FrameEncodingHandler.batchLimit {
      writeGathered()
    }
    noteWrite()
  }

  /// Lets `encode` append encoded frames straight to the gathered ones (a stream's responses,
  /// encoded in place); what it appends is written as ``write(_:promise:)`` writes. If it
  /// throws, what it appended is dropped.
  func writeEncoded<Result, Failure>(_ encode: (inout [UInt8]) throws(Failure) -> Result) throws(Failure) -> Result {
    reserveGathered()
    let count = gathered.count
    let result: Result
    do {
      result = try encode(&gathered)
    } catch {
      gathered.removeSubrange(count...)
      throw error
    }
    guard gathered.count > count else {
      if gathered.isEmpty, !hasUnflushedWrites { gathered = [] }  // an empty pull keeps no buffer
      return result
    }
    if gathered.count >= FrameEncodingHandler.batchLimit { writeGathered() }
    noteWrite()
    return result
  }

  /// A write was made: it is flushed by the end of the burst.
  private func noteWrite() {
    hasUnflushedWrites = true
    guard !isReading else { return }
    scheduleFlush()
  }

  /// Flushes once the jobs already queued on the loop have run.
  private func scheduleFlush() {
    guard !isFlushScheduled else { return }
    isFlushScheduled = true
    let coalescer = NIOLoopBound(self, eventLoop: context.eventLoop)
    context.eventLoop.execute {
      coalescer.value.isFlushScheduled = false
      coalescer.value.flush()
    }
  }

  /// A call handler's task was started during the read burst (queued on the loop): the
  /// burst's writes wait for it, and leave with what it writes before it first suspends — a
  /// new subscriber's handshake answer and its first update in one system call, not two.
  func flushAfterStartedTasks() {
    if isReading { flushesAfterStartedTasks = true }
  }

  /// A read burst begins: writes wait for ``readCompleted()``.
  func readStarted() {
    isReading = true
  }

  /// The read burst is over: flush what it wrote (after the tasks it started, if any).
  func readCompleted() {
    isReading = false
    guard flushesAfterStartedTasks else { return flush() }
    flushesAfterStartedTasks = false
    if hasUnflushedWrites { scheduleFlush() }
  }

  /// Runs `writes` (a stream's responses pulled together) as one burst: what they write leaves
  /// in one flush when they are done, or with the read burst they run in.
  func burst(_ writes: () -> Void) {
    let wasReading = isReading
    isReading = true
    writes()
    isReading = wasReading
    if !wasReading { flush() }
  }

  /// How long a closing connection waits for its last frames to be written, and then for its
  /// peer to close its side (see ``close(after:)``).
  static let lingering = TimeAmount.seconds(2)

  /// Writes `elements` and flushes; once the last of them is written (a GOAWAY that must reach
  /// the peer), or with none once every earlier write is, closes the channel's output, then the channel when the peer has closed its side
  /// too, or after ``lingering``. A peer that reads nothing — the connection's buffers full —
  /// does not keep it open: the channel closes if the frames are not written within
  /// ``lingering``.
  ///
  /// Not at once: the peer may still be sending (the calls a client starts with its handshake,
  /// on a connection refused past the accept rate), and a socket closed with bytes unread sends
  /// a reset, which can destroy what is still on its way to the peer — the GOAWAY that says why,
  /// and when to come back. What arrives meanwhile is read and dropped (the state machine is
  /// closed).
  func close(after elements: [ConnectionElement]) {
    let channel = context.channel
    let written = context.eventLoop.makePromise(of: Void.self)
    if let last = elements.last {
      for element in elements.dropLast() { write(element) }
      write(last, promise: written)
    } else {
      // Nothing of its own to send, but the connection's earlier writes may still wait in the
      // channel (a client that shut its side down reads its answers): an empty write completes
      // once they are written.
      write(.encodedFrames([]), promise: written)
    }
    flush()
    let stalled = channel.eventLoop.scheduleTask(in: Self.lingering) { channel.close(promise: nil) }
    written.futureResult.whenComplete { _ in
      stalled.cancel()
      let outputClosed = channel.eventLoop.makePromise(of: Void.self)
      channel.close(mode: .output, promise: outputClosed)
      outputClosed.futureResult.whenComplete { result in
        // A channel that cannot close its output alone (or has closed already) closes whole.
        guard case .success = result else { return channel.close(promise: nil) }
        let deadline = channel.eventLoop.scheduleTask(in: Self.lingering) { channel.close(promise: nil) }
        channel.closeFuture.whenComplete { _ in deadline.cancel() }
      }
    }
  }

  /// Flushes the writes made so far, if any.
  func flush() {
    guard hasUnflushedWrites else { return }
    hasUnflushedWrites = false
    writeGathered()
    gathered = []
    context.flush()
  }

  /// Appends the frames of `element` to the gathered ones, unless it is a preface or a frame of
  /// ``FrameEncodingHandler/batchLimit`` bytes or more (which goes down on its own, not copied
  /// twice).
  private func gather(_ element: ConnectionElement) -> Bool {
    reserveGathered()
    switch element {
    case .message(let callID, let compressed, let bytes) where bytes.count < FrameEncodingHandler.batchLimit:
      FrameHeader(payloadLength: 1 + bytes.count, kind: .message, callID: callID).append(to: &gathered)
      gathered.append(compressed ? 1 : 0)
      gathered.append(contentsOf: bytes)
    case .frame(let frame) where frame.payload.count < FrameEncodingHandler.batchLimit:
      frame.header.append(to: &gathered)
      gathered.append(contentsOf: frame.payload)
    case .encodedFrames(let bytes) where bytes.count < FrameEncodingHandler.batchLimit:
      gathered.append(contentsOf: bytes)
    case .preface, .message, .frame, .encodedFrames:
      return false
    }
    return true
  }

  /// Gives a burst's first frames room for the usual burst, rather than grow their buffer a
  /// few bytes at a time.
  private func reserveGathered() {
    if gathered.capacity == 0 { gathered.reserveCapacity(Self.initialCapacity) }
  }

  /// The room a burst's gathered frames start with: a subscriber's pull or a publisher's answers
  /// of one read fit in it most of the time.
  private static let initialCapacity = 4 << 10

  /// Hands the gathered frames down the pipeline, keeping the buffer for the burst's next ones.
  private func writeGathered() {
    guard !gathered.isEmpty else { return }
    context.write(NIOAny(ConnectionElement.encodedFrames(gathered)), promise: nil)
    gathered.removeAll(keepingCapacity: true)
  }
}

@available(*, unavailable)
extension FlushCoalescer: Sendable {}
