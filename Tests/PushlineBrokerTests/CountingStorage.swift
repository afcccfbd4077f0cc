import PushlineBroker
import Synchronization

/// In-memory storage that counts commits and can be told to fail them, or to hold them until
/// released (a slow disk, on cue). Tests wait for a commit to be held, or to have failed, on
/// its signals (``waitUntilHeld(_:)``, ``waitUntilFailed(_:)``), not by polling.
final class CountingStorage: BrokerStorage {
  let inner = InMemoryBrokerStorage()
  let commits = Mutex(0)
  let failing = Mutex(false)
  /// How many commits failed because of ``failing``.
  let failures = Mutex(0)
  /// The commits waiting for ``release()``, while commits are held.
  let held = Mutex<[CheckedContinuation<Void, Never>]?>(nil)
  /// Commits held since ``holdCommits()`` and commits failed, each with its waiters.
  private let heldSignal = CountSignal()
  private let failedSignal = CountSignal()

  /// From now on, commits wait until ``release()``.
  func holdCommits() {
    held.withLock { $0 = [] }
    heldSignal.reset()
  }

  /// Returns once `count` commits are held (since ``holdCommits()``).
  func waitUntilHeld(_ count: Int = 1) async {
    await heldSignal.wait(until: count)
  }

  /// Returns once `count` commits have failed because of ``failing``.
  func waitUntilFailed(_ count: Int) async {
    await failedSignal.wait(until: count)
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
      failedSignal.count(failures.withLock { $0 += 1; return $0 })
      throw Failure()
    }
    await withCheckedContinuation { commit in
      let waiting = held.withLock { held -> Int? in
        guard held != nil else { return nil }
        held?.append(commit)
        return held?.count
      }
      if let waiting { heldSignal.count(waiting) } else { commit.resume() }
    }
    commits.withLock { $0 += 1 }
    try await inner.commit(batch)
  }
}
