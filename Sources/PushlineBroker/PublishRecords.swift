/// The idempotency records of committed publishes, each kept at least the window (PROTOCOL.md
/// 3.2), and forgotten a few at a time: they are kept in commit order too, so that a commit
/// forgets the oldest of those expired, a bounded number, rather than all of them being
/// filtered out of the table at once under the intake's lock.
///
/// The order is kept in chunks, so that forgetting the oldest never moves the rest: a window
/// holds millions of records at a high publish rate.
struct PublishRecords {
  private var records: [Broker.PublishRecordKey: PublishRecord] = [:]
  /// Each record's key and commit time, in the order recorded: `chunks[0][head...]`, then the
  /// later chunks. (A chunk goes once its last entry is forgotten: `head` is always in the first.)
  private var chunks: [[(key: Broker.PublishRecordKey, committedAtMillis: Int64)]] = []
  private var head = 0
  private static let chunkSize = 4096

  /// The records storage kept.
  init(_ loaded: [PublishRecord] = []) {
    for record in loaded.sorted(by: { $0.committedAtMillis < $1.committedAtMillis }) { insert(record) }
  }

  /// How many records are kept, expired or not.
  var count: Int { records.count }

  /// When the oldest record kept was committed; `nil` when none is.
  var oldestCommitMillis: Int64? { chunks.first?[head].committedAtMillis }

  /// When the newest record kept was committed; `nil` when none is.
  var newestCommitMillis: Int64? { chunks.last?.last?.committedAtMillis }

  /// The record of `key`, if it was committed at or after `cutoff`.
  func record(of key: Broker.PublishRecordKey, committedSince cutoff: Int64) -> PublishRecord? {
    guard let record = records[key], record.committedAtMillis >= cutoff else { return nil }
    return record
  }

  /// Keeps `record`, the newest (records come in commit order), in place of its key's expired one.
  mutating func insert(_ record: PublishRecord) {
    let key = Broker.PublishRecordKey(topic: record.topic, key: record.key)
    records[key] = record
    if chunks.last?.count ?? Self.chunkSize == Self.chunkSize {
      chunks.append([])
      chunks[chunks.count - 1].reserveCapacity(Self.chunkSize)
    }
    chunks[chunks.count - 1].append((key, record.committedAtMillis))
  }

  /// Forgets the oldest records committed before `cutoff`, and more while over `maxCount`
  /// records, `limit` at most. A key recorded again since keeps its newer record.
  mutating func forget(committedBefore cutoff: Int64, keepingAtMost maxCount: Int = .max, atMost limit: Int) {
    var forgotten = 0
    while forgotten < limit, let oldest = chunks.first?[head], oldest.committedAtMillis < cutoff || records.count > maxCount {
      if records[oldest.key]?.committedAtMillis == oldest.committedAtMillis { records[oldest.key] = nil }
      forgotten += 1
      head += 1
      if head == chunks[0].count {
        chunks.removeFirst()
        head = 0
      }
    }
  }
}
