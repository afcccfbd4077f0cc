import PushlineSchema

/// A publish whose offsets are assigned and whose commit is under way, with everyone waiting
/// for its answer: the publisher, and retries that arrived with the same idempotency key
/// before the commit ended (they get `replayed` answers).
struct PendingPublish {
  var topic: String
  var epoch: Int64
  var records: [CardRecord]
  var idempotencyKey: String?
  var waiters: [PublishWaiter]

  /// The answer once committed.
  func response(replayed: Bool) -> PublishResponse {
    var response = PublishResponse(
      epoch: epoch, firstOffset: records.first?.offset ?? 0, lastOffset: records.last?.offset ?? 0)
    if replayed { response.replayed = true }
    return response
  }
}

/// Someone waiting for a pending publish's answer.
enum PublishWaiter {
  /// A publisher's task, suspended until the commit ends — or until it is asked to lead the
  /// next commit.
  case task(CheckedContinuation<PublishTurn, any Error>, isRetry: Bool)
  /// The task running the commit, which takes its own answer from it.
  case leader(isRetry: Bool)
}

/// What a suspended publisher is resumed with.
enum PublishTurn {
  /// The publish is committed (or was already): its answer.
  case answered(PublishResponse)
  /// No commit is running: this publisher's task commits what is pending, its own publish
  /// among it (group commit without a task of its own).
  case lead
}
