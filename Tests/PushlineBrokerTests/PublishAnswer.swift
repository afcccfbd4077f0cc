import PushlineBroker
import PushlineRPC
import PushlineSchema
import Synchronization

/// The answer to a publish handed to the broker without a task (``Broker/enqueuePublish(_:_:removing:key:)``):
/// known at once when the broker refused or replayed it, later when it commits.
final class PublishAnswer: Sendable {
  private let result = Mutex<Result<PublishResponse, RPCError>?>(nil)
  private let signal = CountSignal()

  /// Takes the broker's answer.
  func complete(_ result: Result<PublishResponse, RPCError>) {
    self.result.withLock { $0 = result }
    signal.count(1)
  }

  /// Whether the broker has answered yet.
  var isAnswered: Bool { result.withLock { $0 != nil } }

  /// The response, once the broker answers; throws its refusal.
  var value: PublishResponse {
    get async throws {
      await signal.wait(until: 1)
      return try result.withLock { $0! }.get()
    }
  }
}
