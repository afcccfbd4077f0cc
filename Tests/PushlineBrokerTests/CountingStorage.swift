import PushlineBroker
import Synchronization

/// In-memory storage that counts commits and can be told to fail them.
final class CountingStorage: BrokerStorage {
  let inner = InMemoryBrokerStorage()
  let commits = Mutex(0)
  let failing = Mutex(false)

  struct Failure: Error {}

  func loadTopics() async throws -> [TopicState] { try await inner.loadTopics() }

  func loadPublishRecords(sinceMillis: Int64) async throws -> [PublishRecord] {
    try await inner.loadPublishRecords(sinceMillis: sinceMillis)
  }

  func commit(_ batch: StorageBatch) async throws {
    if failing.withLock({ $0 }) { throw Failure() }
    commits.withLock { $0 += 1 }
    try await inner.commit(batch)
  }
}
