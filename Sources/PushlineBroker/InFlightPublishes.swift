/// The publishes on their way to storage — those waiting for the next commit (`pending`) and
/// those of the commit under way (`committing`) — with their idempotency keys indexed, so that
/// a retry finds its original in constant time however many are in flight (a publisher keeps up
/// to 8,192: PROTOCOL.md 3).
///
/// Each publish is numbered in intake order, and the index maps a key to its publish's number,
/// which says where the publish is: `pending` holds the numbers from `pendingStart` on,
/// `committing` those from `committingStart` up to `pendingStart`. So a commit taking the
/// pending publishes renumbers nothing. A key is in flight once at most: a retry joins it.
struct InFlightPublishes {
  /// The publishes waiting for the next commit, in intake order.
  private(set) var pending: [PendingPublish] = []
  /// The publishes of the commit under way.
  private(set) var committing: [PendingPublish] = []
  /// The number of each publish in flight with an idempotency key.
  private var numbers: [Broker.PublishRecordKey: Int] = [:]
  private var pendingStart = 0
  private var committingStart = 0
  /// The memory the publishes in flight hold, pending or committing (``PendingPublish/byteCount(of:)``):
  /// what the broker bounds (``BrokerConfiguration/maxInFlightPublishBytes``).
  private(set) var byteCount = 0
  /// The part of ``byteCount`` the commit under way holds.
  private var committingByteCount = 0

  /// How many publishes with an idempotency key are in flight.
  var keyCount: Int { numbers.count }

  /// Queues `publish` for the next commit; its key must not be in flight (``join(_:fingerprint:_:)`` first).
  mutating func append(_ publish: PendingPublish) {
    if let key = publish.idempotencyKey {
      numbers[Broker.PublishRecordKey(topic: publish.topic, key: key)] = pendingStart + pending.count
    }
    byteCount += publish.byteCount
    pending.append(publish)
  }

  /// What became of a retry that looked for its original in flight.
  enum Joining { case joined, differs, notInFlight }

  /// Adds `completion` as a retry's waiter to the publish in flight with `key`, if there is one
  /// and it has the retry's changes (`fingerprint`, worked out only then); a publish with
  /// other changes is not joined.
  mutating func join(
    _ key: Broker.PublishRecordKey, fingerprint: @autoclosure () -> PublishFingerprint, _ completion: any PublishCompletion
  ) -> Joining {
    guard let number = numbers[key] else { return .notInFlight }
    if number >= pendingStart {
      guard PublishFingerprint(of: pending[number - pendingStart].records) == fingerprint() else { return .differs }
      pending[number - pendingStart].retries.append(completion)
    } else {
      guard PublishFingerprint(of: committing[number - committingStart].records) == fingerprint() else { return .differs }
      committing[number - committingStart].retries.append(completion)
    }
    return .joined
  }

  /// Puts the pending publishes to `topic` in `epoch`, the topic's new one: they are committed
  /// with it, or after it (the commit under way is not).
  mutating func move(_ topic: String, to epoch: Int64) {
    for position in pending.indices where pending[position].topic == topic { pending[position].epoch = epoch }
  }

  /// Makes the pending publishes the commit under way, and returns them. (The last commit must
  /// have ended: ``finishCommitting()``.)
  mutating func startCommitting() -> [PendingPublish] {
    committing = pending
    committingByteCount = byteCount
    pending = []
    committingStart = pendingStart
    pendingStart += committing.count
    return committing
  }

  /// Ends the commit under way: its keys are in flight no more (committed, a retry finds the
  /// record; failed, a retry is a new publish). Returns its publishes, with the retries that
  /// joined them, to be answered.
  mutating func finishCommitting() -> [PendingPublish] {
    // By position: a publish taken out of the array whole is a copy of everything it holds.
    for position in committing.indices {
      guard let key = committing[position].idempotencyKey else { continue }
      numbers[Broker.PublishRecordKey(topic: committing[position].topic, key: key)] = nil
    }
    byteCount -= committingByteCount
    committingByteCount = 0
    defer { committing = [] }
    return committing
  }
}
