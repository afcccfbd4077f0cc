import Dispatch
import PushlineRPC
import PushlineSchema
import Synchronization

/// The completions of a completing handler's requests, held until the test answers them.
final class HeldCompletions: Sendable {
  let completions = Mutex<[UnaryCompletion<MetadataEntry>]>([])
  /// One element per request held.
  let (arrivals, arrived) = AsyncStream<Void>.makeStream()

  /// Holds `completion` and signals its arrival: a completing handler's body.
  func hold(_ completion: UnaryCompletion<MetadataEntry>) {
    completions.withLock { $0.append(completion) }
    arrived.yield()
  }
}

/// A completing handler's body: answers from a Dispatch thread with the request's value
/// uppercased, or FAILED_PRECONDITION for the value "fail".
func answerUppercasedFromAnotherThread(_ request: MetadataEntry, _ completion: UnaryCompletion<MetadataEntry>) {
  DispatchQueue.global().async {
    guard request.value != "fail" else {
      return completion.fail(RPCError(code: .failedPrecondition, message: "asked to fail"))
    }
    var response = request
    response.value = request.value?.uppercased()
    completion.succeed(response)
  }
}
