import PushlineSchema

/// How a subscription starts on a topic — the catch-up from the client's position when it can
/// resume, else a snapshot — built from a copy of the topic outside the broker's lock, and
/// good for the topic as long as it has not changed since.
struct PreparedStart {
  /// What the start was built from: the same epoch, top offset and floor make the same start.
  private let epoch: Int64
  private let topOffset: Int64
  private let floorOffset: Int64
  /// The changes after the client's position, when it can resume.
  var catchUp: [CardRecord]?
  /// The snapshot, when it cannot (built later when a catch-up turns out too long for the queue).
  var snapshot: EncodedTopicUpdate?

  /// The start on `topic` of a client at `position` (none: a snapshot), at `nowMillis`; a
  /// catch-up longer than `maxCatchUp` changes is a snapshot instead.
  init(_ topic: TopicState, from position: TopicPosition?, catchUpsUpTo maxCatchUp: Int = .max, nowMillis: Int64) {
    epoch = topic.epoch
    topOffset = topic.topOffset
    floorOffset = topic.floorOffset
    if let position, topic.canResume(epoch: position.epoch, offset: position.offset), let offset = position.offset,
      case let changes = topic.changes(after: offset), changes.count <= maxCatchUp
    {
      catchUp = changes
    } else {
      snapshot = topic.snapshot(nowMillis: nowMillis)
    }
  }

  /// Whether the start is still right for `topic`: nothing was committed or pruned since.
  func isCurrent(for topic: TopicState) -> Bool {
    topic.epoch == epoch && topic.topOffset == topOffset && topic.floorOffset == floorOffset
  }
}
