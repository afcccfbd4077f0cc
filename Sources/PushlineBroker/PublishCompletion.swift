public import PushlineRPC
public import PushlineSchema

/// Who waits for a publish's answer (see ``Broker/publish(_:for:committingOn:completion:)``):
/// a transport's call, or an awaiting caller. The commit calls it on its own thread.
///
/// A protocol, not a closure, so that the call a publish answers travels with it as a plain
/// value: making a closure of it would be a heap allocation per publish.
public protocol PublishCompletion: Sendable {
  /// Answers with the offsets once the changes are durable, or with the error.
  func complete(with result: Result<PublishResponse, RPCError>)
}

/// A publish call's answer, sent to its publisher.
extension UnaryCompletion: PublishCompletion where Response == PublishResponse {}

/// An awaiting caller of ``Broker/publish(_:for:)``, resumed with the answer.
extension CheckedContinuation: PublishCompletion where T == PublishResponse, E == any Error {
  public func complete(with result: Result<PublishResponse, RPCError>) {
    resume(with: result.mapError { $0 })
  }
}
