import PushlineRPC
import PushlineSchema

/// A publish stream's answer to one of its publishes (see ``BrokerService/publishStreamMethod``):
/// the offsets, or a refusal as a ``PublishOutcome`` — the stream goes on — except for
/// UNAUTHENTICATED, which ends the stream: a token that has expired refuses every publish
/// after it, so the publisher must reconnect with a new one; and RESOURCE_EXHAUSTED (too many
/// publishes waiting for storage), refused as the publish arrives: the publishes behind it,
/// which might have fitted, must not be applied before its retry.
struct StreamedPublishCompletion: PublishCompletion {
  let answer: UnaryCompletion<PublishOutcome>

  func complete(with result: Result<PublishResponse, RPCError>) {
    switch result {
    case .success(let response): answer.succeed(PublishOutcome(response))
    case .failure(let error) where error.code == .unauthenticated || error.code == .resourceExhausted: answer.fail(error)
    case .failure(let error): answer.succeed(PublishOutcome(refusedWith: error.status))
    }
  }
}
