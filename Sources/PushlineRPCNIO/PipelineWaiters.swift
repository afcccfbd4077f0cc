import NIOCore
import PushlineRPC

/// The client's side of a pipelined call in progress: the senders waiting for their answers,
/// oldest first (the server answers in request order), how many of its requests wait for room
/// in the connection's ``PipelineWindow``, and who waits for the call's end.
///
/// Used only on the connection's event loop.
final class PipelineWaiters {
  /// What a request sent after the pipeline's finish fails with.
  static let finished = RPCError(code: .failedPrecondition, message: "the pipeline is finished: it takes no more requests")

  /// Senders waiting for their answers, oldest first.
  private var unanswered = CircularBuffer<CheckedContinuation<[UInt8], any Error>>()
  private var end: CheckedContinuation<Void, any Error>?
  /// The call's requests waiting in the connection's queue, not sent yet.
  var queued = 0
  /// The caller has finished the pipeline: it sends no more requests.
  private(set) var isClosing = false

  /// How many requests sent wait for their answers.
  var unansweredCount: Int { unanswered.count }

  /// A request went out: `answer` gets its response.
  func expect(_ answer: CheckedContinuation<[UInt8], any Error>) {
    unanswered.append(answer)
  }

  /// A response arrived: it answers the oldest request still unanswered. Returns false when
  /// none was waiting (the server broke the pipeline's rule; the call's end says the rest).
  func answer(with response: [UInt8]) -> Bool {
    guard let oldest = unanswered.popFirst() else { return false }
    oldest.resume(returning: response)
    return true
  }

  /// The caller finished the pipeline: `ended` resumes when the call ends.
  func close(_ ended: CheckedContinuation<Void, any Error>) {
    isClosing = true
    end = ended
  }

  /// The call ended OK: requests it left unanswered fail.
  func ended() {
    failUnanswered(RPCError(code: .internal, message: "the call ended OK without answering every request"))
    end?.resume()
    end = nil
  }

  /// The call ended with `error`: every waiter gets it.
  func fail(_ error: any Error) {
    failUnanswered(error)
    end?.resume(throwing: error)
    end = nil
  }

  private func failUnanswered(_ error: any Error) {
    while let waiter = unanswered.popFirst() { waiter.resume(throwing: error) }
  }
}

@available(*, unavailable)
extension PipelineWaiters: Sendable {}
