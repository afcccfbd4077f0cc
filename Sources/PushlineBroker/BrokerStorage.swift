/// Where the broker keeps its topics durably: an implementation must make each
/// ``commit(_:)`` atomic and durable before it returns, because the broker acknowledges
/// publishes right after.
public protocol BrokerStorage: Sendable {
  /// Every topic with its cards and tombstones, for the broker to start from.
  func loadTopics() async throws -> [TopicState]

  /// The idempotency records written at or after `sinceMillis`.
  func loadPublishRecords(sinceMillis: Int64) async throws -> [PublishRecord]

  /// Writes `batch` atomically: all of it or, on error, none of it.
  func commit(_ batch: StorageBatch) async throws
}

/// What one commit writes: the changes of one or more publishes (a group commit), tombstone
/// prunes, and idempotency records.
public struct StorageBatch: Sendable {
  /// Per topic: its epoch and new top offset, and the changed records.
  public var topics: [TopicChanges] = []
  public var prunes: [TombstonePrune] = []
  public var publishRecords: [PublishRecord] = []
  /// Idempotency records committed before this are deleted, the oldest first, at most
  /// ``maxPublishRecordsToForget`` of them: a few per commit, so that no commit pays for a
  /// minute's worth. Every record committed at or after it must be kept (PROTOCOL.md 3.2).
  public var forgetPublishRecordsBeforeMillis: Int64?
  /// How many idempotency records this commit deletes at most.
  public var maxPublishRecordsToForget = 0
  /// Topics given a new epoch by this commit, by name: a client showed that storage lost
  /// history of theirs. Written after the batch's changes and records, so that those of the
  /// topic, and every idempotency record of it kept before, take the new epoch too (their
  /// offsets stay, and are valid in it).
  public var newEpochs: [String: Int64] = [:]

  /// An empty batch.
  public init() {}

  /// Whether the batch writes nothing.
  public var isEmpty: Bool { topics.isEmpty && prunes.isEmpty && publishRecords.isEmpty && newEpochs.isEmpty }
}

/// One topic's part of a commit.
public struct TopicChanges: Sendable {
  public var topic: String
  public var epoch: Int64
  public var topOffset: Int64
  public var records: [CardRecord]

  /// A topic's changes.
  public init(topic: String, epoch: Int64, topOffset: Int64, records: [CardRecord]) {
    self.topic = topic
    self.epoch = epoch
    self.topOffset = topOffset
    self.records = records
  }
}

/// A publish remembered by its idempotency key, so that a retry gets the same answer.
public struct PublishRecord: Hashable, Sendable {
  public var topic: String
  public var key: String
  public var epoch: Int64
  public var firstOffset: Int64
  public var lastOffset: Int64
  public var committedAtMillis: Int64
  /// A 64-bit hash of the publish's changes, so that a retry with the key is told apart from
  /// other changes sent with it by mistake; `nil` in records kept before fingerprints were.
  public var fingerprint: Int64?

  /// A record.
  public init(
    topic: String, key: String, epoch: Int64, firstOffset: Int64, lastOffset: Int64, committedAtMillis: Int64,
    fingerprint: Int64? = nil
  ) {
    self.topic = topic
    self.key = key
    self.epoch = epoch
    self.firstOffset = firstOffset
    self.lastOffset = lastOffset
    self.committedAtMillis = committedAtMillis
    self.fingerprint = fingerprint
  }
}
