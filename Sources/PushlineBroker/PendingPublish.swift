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
  /// The publisher, waiting for the answer.
  var completion: any PublishCompletion
  /// The retries that joined it, waiting too (usually none: no storage).
  var retries: [any PublishCompletion] = []
  /// The bytes of its cards and card IDs, which it holds until answered.
  let byteCount: Int

  /// A publish of `records` to `topic` in `epoch`, answered through `completion`.
  init(topic: String, epoch: Int64, records: [CardRecord], idempotencyKey: String?, completion: any PublishCompletion) {
    self.topic = topic
    self.epoch = epoch
    self.records = records
    self.idempotencyKey = idempotencyKey
    self.completion = completion
    byteCount = records.reduce(0) { $0 + $1.cardID.utf8.count + ($1.card?.encodedSize() ?? 0) }
  }

  /// Answers the publisher with the offsets, and each retry with them marked `replayed`.
  func answerCommitted() {
    completion.complete(with: .success(response(replayed: false)))
    for retry in retries { retry.complete(with: .success(response(replayed: true))) }
  }

  /// Answers the publisher and each retry with `error`.
  func fail(_ error: RPCError) {
    completion.complete(with: .failure(error))
    for retry in retries { retry.complete(with: .failure(error)) }
  }

  /// The answer once committed.
  private func response(replayed: Bool) -> PublishResponse {
    var response = PublishResponse(
      epoch: epoch, firstOffset: records.first?.offset ?? 0, lastOffset: records.last?.offset ?? 0)
    if replayed { response.replayed = true }
    return response
  }
}
