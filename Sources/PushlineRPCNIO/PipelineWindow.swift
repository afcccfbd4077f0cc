import NIOCore

/// A client connection's window of requests unanswered on its pipelined calls — the server
/// allows `maxConcurrentCalls` of them, for all the connection's pipelined calls together —
/// and the requests waiting for room in it, oldest first, whichever call they are for.
///
/// Used only on the connection's event loop.
final class PipelineWindow {
  /// Sends a request of the pipelined call `callID`.
  typealias Send = (_ request: [UInt8], _ callID: UInt32) -> Void

  private struct Queued {
    var callID: UInt32
    var waiters: PipelineWaiters
    var request: [UInt8]
    var answer: CheckedContinuation<[UInt8], any Error>
  }

  private var size: Int
  private var unanswered = 0
  /// Requests waiting for room, oldest first.
  private var queued = CircularBuffer<Queued>()

  /// A window of `size` requests.
  init(size: Int) {
    self.size = size
  }

  /// `request` of `callID` is to go out: through `send` now if the window has room and no
  /// request waits before it, later (from ``free(_:send:halfClose:)``) otherwise.
  func submit(
    _ request: [UInt8], callID: UInt32, waiters: PipelineWaiters, answer: CheckedContinuation<[UInt8], any Error>, send: Send
  ) {
    guard queued.isEmpty, unanswered < size else {
      waiters.queued += 1
      return queued.append(Queued(callID: callID, waiters: waiters, request: request, answer: answer))
    }
    transmit(request, callID: callID, waiters: waiters, answer: answer, send: send)
  }

  /// `count` requests are no longer unanswered (answered, or their call ended): the room goes
  /// to the oldest requests waiting. A call finished by its caller whose last waiting request
  /// has gone out is passed to `halfClose`.
  func free(_ count: Int, send: Send, halfClose: (_ callID: UInt32) -> Void) {
    unanswered -= count
    while unanswered < size, let waiting = queued.popFirst() {
      waiting.waiters.queued -= 1
      transmit(waiting.request, callID: waiting.callID, waiters: waiting.waiters, answer: waiting.answer, send: send)
      if waiting.waiters.isClosing, waiting.waiters.queued == 0 { halfClose(waiting.callID) }
    }
  }

  /// The server's handshake settled the window at `size` (the window was opened before it, at
  /// the protocol's default): requests waiting go out if it grew.
  func resize(to size: Int, send: Send, halfClose: (_ callID: UInt32) -> Void) {
    self.size = size
    free(0, send: send, halfClose: halfClose)
  }

  /// The call `callID` has ended: its requests still waiting fail with `error`.
  func dropQueued(of callID: UInt32, failingWith error: any Error) {
    let dropped = queued.filter { $0.callID == callID }
    guard !dropped.isEmpty else { return }
    queued.removeAll { $0.callID == callID }
    for waiting in dropped {
      waiting.waiters.queued -= 1
      waiting.answer.resume(throwing: error)
    }
  }

  private func transmit(
    _ request: [UInt8], callID: UInt32, waiters: PipelineWaiters, answer: CheckedContinuation<[UInt8], any Error>, send: Send
  ) {
    waiters.expect(answer)
    unanswered += 1
    send(request, callID)
  }
}

@available(*, unavailable)
extension PipelineWindow: Sendable {}
