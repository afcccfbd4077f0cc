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
  /// The memory it holds until answered, about (``byteCount(of:)``).
  let byteCount: Int

  /// A publish of `records` to `topic` in `epoch`, holding `byteCount` bytes, answered through
  /// `completion`.
  init(
    topic: String, epoch: Int64, records: [CardRecord], idempotencyKey: String?, byteCount: Int, completion: any PublishCompletion
  ) {
    self.topic = topic
    self.epoch = epoch
    self.records = records
    self.idempotencyKey = idempotencyKey
    self.byteCount = byteCount
    self.completion = completion
  }

  /// The memory a publish of `request` holds while it waits for storage, about: its cards, card
  /// IDs, topic and key, and what keeping each change (64 bytes) and the publish (128) costs.
  static func byteCount(of request: EncodedPublishRequest) -> Int {
    request.changes.reduce(128 + request.topic.utf8.count + (request.idempotencyKey?.utf8.count ?? 0)) {
      $0 + 64 + $1.cardID.utf8.count + ($1.card?.encodedSize() ?? 0)
    }
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
