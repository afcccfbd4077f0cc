import PushlineBroker
import Synchronization

/// In-memory storage that counts commits and can be told to fail them, or to hold them until
/// released (a slow disk, on cue).
final class CountingStorage: BrokerStorage {
  let inner = InMemoryBrokerStorage()
  let commits = Mutex(0)
  let failing = Mutex(false)
  /// How many commits failed because of ``failing``.
  let failures = Mutex(0)
  /// The commits waiting for ``release()``, while commits are held.
  let held = Mutex<[CheckedContinuation<Void, Never>]?>(nil)

  /// From now on, commits wait until ``release()``.
  func holdCommits() {
    held.withLock { $0 = [] }
  }

  /// How many commits are waiting for ``release()``.
  var heldCount: Int { held.withLock { $0?.count ?? 0 } }

  /// Lets the held commits, and all later ones, go on.
  func release() {
    for commit in held.withLock({ held in defer { held = nil }; return held ?? [] }) { commit.resume() }
  }

  struct Failure: Error {}

  func loadTopics() async throws -> [TopicState] { try await inner.loadTopics() }

  func loadPublishRecords(sinceMillis: Int64) async throws -> [PublishRecord] {
    try await inner.loadPublishRecords(sinceMillis: sinceMillis)
  }

  func commit(_ batch: StorageBatch) async throws {
    if failing.withLock({ $0 }) {
      failures.withLock { $0 += 1 }
      throw Failure()
    }
    await withCheckedContinuation { commit in
      let waits = held.withLock { held in
        guard held != nil else { return false }
        held?.append(commit)
        return true
      }
      if !waits { commit.resume() }
    }
    commits.withLock { $0 += 1 }
    try await inner.commit(batch)
  }
}
