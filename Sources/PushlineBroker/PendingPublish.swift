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
  /// The publisher's answer.
  var completion: @Sendable (Result<PublishResponse, RPCError>) -> Void
  /// The answers of the retries that joined it (usually none: no storage).
  var retries: [@Sendable (Result<PublishResponse, RPCError>) -> Void] = []

  /// Answers the publisher with the offsets, and each retry with them marked `replayed`.
  func answerCommitted() {
    completion(.success(response(replayed: false)))
    for retry in retries { retry(.success(response(replayed: true))) }
  }

  /// Answers the publisher and each retry with `error`.
  func fail(_ error: RPCError) {
    completion(.failure(error))
    for retry in retries { retry(.failure(error)) }
  }

  /// The answer once committed.
  private func response(replayed: Bool) -> PublishResponse {
    var response = PublishResponse(
      epoch: epoch, firstOffset: records.first?.offset ?? 0, lastOffset: records.last?.offset ?? 0)
    if replayed { response.replayed = true }
    return response
  }
}
