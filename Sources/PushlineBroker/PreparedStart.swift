import PushlineSchema

/// How a subscription starts on a topic — the catch-up from the client's position when it can
/// resume, else a snapshot — built from a copy of the topic outside the broker's lock, and
/// good for the topic later with the changes made since (``delta(in:)``).
///
/// The copy shares the topic's card table: a commit to the topic while the start is built
/// copies the table (under the lock), once per generation of starts being built.
struct PreparedStart {
  /// What the start was built from: the epoch, and the top offset it brings the client to.
  private let epoch: Int64
  /// The offset the start positions the client at.
  let topOffset: Int64
  /// The changes after the client's position, when it can resume.
  var catchUp: [CardRecord]?
  /// The snapshot, when it cannot (built later when a catch-up turns out too long for the queue).
  var snapshot: EncodedTopicUpdate?

  /// The start on `topic` of a client at `position` (none: a snapshot), at `nowMillis`; a
  /// catch-up longer than `maxCatchUp` changes is a snapshot instead.
  init(_ topic: TopicState, from position: TopicPosition?, catchUpsUpTo maxCatchUp: Int = .max, nowMillis: Int64) {
    epoch = topic.epoch
    topOffset = topic.topOffset
    if let position, topic.canResume(epoch: position.epoch, offset: position.offset), let offset = position.offset,
      case let changes = topic.changes(after: offset), changes.count <= maxCatchUp
    {
      catchUp = changes
    } else {
      snapshot = topic.snapshot(nowMillis: nowMillis)
    }
  }

  /// The changes of `topic` after the start's offset, which bring a client that took the start
  /// up to the topic as it is now (empty when nothing changed); `nil` when the start is no good
  /// for it: another epoch, or removals since the start's offset already pruned.
  func delta(in topic: TopicState) -> [CardRecord]? {
    guard topic.epoch == epoch, topic.floorOffset <= topOffset else { return nil }
    return topic.topOffset == topOffset ? [] : topic.changes(after: topOffset)
  }
}
