import PushlineRPC
import Synchronization

/// Storage that keeps nothing across processes: for tests, and for deployments that accept
/// losing history on restart (the topics then come back with new epochs, so clients take a
/// snapshot instead of resuming).
public final class InMemoryBrokerStorage: BrokerStorage {
  private struct Contents {
    var topics: [String: TopicState] = [:]
    var publishRecords: [String: PublishRecord] = [:]
  }

  private let contents = Mutex(Contents())

  /// Empty storage.
  public init() {}

  public func loadTopics() async throws -> [TopicState] {
    contents.withLock { Array($0.topics.values) }
  }

  public func loadPublishRecords(sinceMillis: Int64) async throws -> [PublishRecord] {
    contents.withLock { $0.publishRecords.values.filter { $0.committedAtMillis >= sinceMillis } }
  }

  public func commit(_ batch: StorageBatch) async throws {
    contents.withLock { contents in
      for changes in batch.topics {
        // In place: a copy of the topic would copy its whole card table on every commit.
        contents.topics.changeValue(forKey: changes.topic, default: TopicState(name: changes.topic, epoch: changes.epoch)) {
          $0.apply(changes.records)
          $0.topOffset = max($0.topOffset, changes.topOffset)
        }
      }
      for prune in batch.prunes { contents.topics.changeValue(forKey: prune.topic) { $0.apply(prune) } }
      if let cutoff = batch.forgetPublishRecordsBeforeMillis {
        contents.publishRecords = contents.publishRecords.filter { $0.value.committedAtMillis >= cutoff }
      }
      for record in batch.publishRecords { contents.publishRecords[record.topic + "\u{0}" + record.key] = record }
    }
  }
}
