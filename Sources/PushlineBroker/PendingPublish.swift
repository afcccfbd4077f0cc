import PushlineRPC
import PushlineSchema

/// A publish whose offsets are assigned and whose commit is under way, with everyone waiting
/// for its answer: the publisher, and retries that arrived with the same idempotency key
/// before the commit ended (they get `replayed` answers).
struct PendingPublish {
  var topic: String
  var epoch: Int64
  var records: [CardRecord]
  var idempotencyKey: String?
  var waiters: [(completion: @Sendable (Result<PublishResponse, RPCError>) -> Void, isRetry: Bool)]

  /// The answer once committed.
  func response(replayed: Bool) -> PublishResponse {
    var response = PublishResponse(
      epoch: epoch, firstOffset: records.first?.offset ?? 0, lastOffset: records.last?.offset ?? 0)
    if replayed { response.replayed = true }
    return response
  }
}
