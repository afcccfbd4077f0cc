public import PushlineWire

/// How a completing unary handler (see ``RPCRouter/registerUnary(_:request:response:completing:)``)
/// answers its call: with one response, or with the ``RPCError`` that ends the call. Safe to
/// use from any thread; only the first answer counts, and an answer after the call is over
/// (cancelled, past its deadline, its connection gone) is dropped.
public struct UnaryCompletion<Response: WireMessage>: Sendable {
  @usableFromInline let answer: CallAnswer

  /// A completion handing its answer to `answer`; the router creates these.
  @usableFromInline init(answer: CallAnswer) {
    self.answer = answer
  }

  /// Answers with `response` and status OK.
  @inlinable  // Specialised where the response type is known: no generic dispatch per answer.
  public func succeed(_ response: Response) {
    answer.send(.success(response.serializedBytes()))
  }

  /// Ends the call with `error`'s status.
  @inlinable
  public func fail(_ error: RPCError) {
    answer.send(.failure(error))
  }

  /// Answers with `result`: its response, or its error's status.
  @inlinable
  public func complete(with result: Result<Response, RPCError>) {
    answer.send(result.map { $0.serializedBytes() })
  }
}
