import PushlineRPC

/// The client's side of a pipelined call in progress: the senders waiting for their answers,
/// oldest first (the server answers in request order); the requests waiting for room in the
/// server's window of unanswered requests; and who waits for the call's end.
///
/// Used only on the connection's event loop.
final class PipelineWaiters {
  /// A request and who waits for its answer.
  typealias Request = (bytes: [UInt8], answer: CheckedContinuation<[UInt8], any Error>)

  /// What a request sent after the pipeline's finish fails with.
  static let finished = RPCError(code: .failedPrecondition, message: "the pipeline is finished: it takes no more requests")

  /// How many requests the server lets the call have unanswered.
  private let window: Int
  private var unanswered: [CheckedContinuation<[UInt8], any Error>] = []
  /// The position of the oldest unanswered sender in `unanswered`.
  private var oldest = 0
  /// Requests not sent yet, the window being full: those from `nextQueued` on.
  private var queued: [Request] = []
  private var nextQueued = 0
  private var hasQueued: Bool { nextQueued < queued.count }
  private var end: CheckedContinuation<Void, any Error>?
  /// The caller has finished the pipeline: it sends no more requests.
  private(set) var isClosing = false

  /// Waiters for a call the server lets have `window` requests unanswered.
  init(window: Int) {
    self.window = window
  }

  /// `request` is to go out: passes it to `send` now if the window has room, or later, from
  /// ``answer(with:send:)``.
  func submit(_ request: Request, send: ([UInt8]) -> Void) {
    guard !hasQueued, unanswered.count - oldest < window else { return queued.append(request) }
    unanswered.append(request.answer)
    send(request.bytes)
  }

  /// A response arrived: it answers the oldest request still unanswered, and the room it
  /// frees goes to the oldest request queued, passed to `send`. (A response beyond the
  /// requests sent is dropped: the server broke the pipeline's rule, and the call's end says
  /// the rest.) Returns whether the pipeline, finished by its caller, has sent its last
  /// request just now.
  func answer(with response: [UInt8], send: ([UInt8]) -> Void) -> Bool {
    guard oldest < unanswered.count else { return false }
    unanswered[oldest].resume(returning: response)
    oldest += 1
    if oldest == unanswered.count {
      unanswered.removeAll(keepingCapacity: true)
      oldest = 0
    }
    guard hasQueued else { return false }
    let next = queued[nextQueued]
    nextQueued += 1
    if !hasQueued {
      queued.removeAll(keepingCapacity: true)
      nextQueued = 0
    }
    unanswered.append(next.answer)
    send(next.bytes)
    return isClosing && !hasQueued
  }

  /// The caller finished the pipeline: `ended` resumes when the call ends. Returns whether
  /// every request has gone out (the half-close may follow at once).
  func close(_ ended: CheckedContinuation<Void, any Error>) -> Bool {
    isClosing = true
    end = ended
    return !hasQueued
  }

  /// The call ended OK: requests it left unanswered fail.
  func ended() {
    failWaiting(RPCError(code: .internal, message: "the call ended OK without answering every request"))
    end?.resume()
    end = nil
  }

  /// The call ended with `error`: every waiter gets it.
  func fail(_ error: any Error) {
    failWaiting(error)
    end?.resume(throwing: error)
    end = nil
  }

  private func failWaiting(_ error: any Error) {
    for waiter in unanswered[oldest...] { waiter.resume(throwing: error) }
    for request in queued[nextQueued...] { request.answer.resume(throwing: error) }
    unanswered = []
    oldest = 0
    queued = []
    nextQueued = 0
  }
}

@available(*, unavailable)
extension PipelineWaiters: Sendable {}
