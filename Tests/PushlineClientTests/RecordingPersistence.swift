import Foundation
import PushlineClient
import Synchronization

/// A cache persistence in memory that records every save, tells each as it starts and as it
/// ends, and notices saves that overlap. Its first save can be held until ``release()`` (to
/// start another flush meanwhile) or can fail (to see what a flush keeps for the next one).
final class RecordingPersistence: CachePersistence {
  /// What one save was given.
  struct Save: Hashable, Sendable {
    var topics: [TopicCache]
    var clockSkewMillis: Int64?
  }

  /// What the first save does.
  enum FirstSave: Sendable {
    case stores
    /// Waits for ``release()`` before storing.
    case isHeld
    /// Throws ``failure``, storing nothing.
    case fails
  }

  private struct State {
    var saves: [Save] = []
    var topics: [String: TopicCache] = [:]
    var clockSkewMillis: Int64?
    var started = 0
    var inProgress = 0
    var overlapped = false
  }

  /// The error a failing first save throws.
  static let failure = CocoaError(.fileWriteUnknown)
  /// Each save as it starts, before it is held.
  let started: AsyncStream<Save>
  /// Each save once stored.
  let stored: AsyncStream<Save>
  private let startedContinuation: AsyncStream<Save>.Continuation
  private let storedContinuation: AsyncStream<Save>.Continuation
  private let firstSave: FirstSave
  private let held = DispatchSemaphore(value: 0)
  private let state = Mutex(State())

  /// An empty persistence whose first save does as `firstSave` says.
  init(firstSave: FirstSave = .stores) {
    self.firstSave = firstSave
    (started, startedContinuation) = AsyncStream.makeStream()
    (stored, storedContinuation) = AsyncStream.makeStream()
  }

  /// The saves stored, in order.
  var saves: [Save] { state.withLock { $0.saves } }
  /// The stored copy of `topic`.
  func topic(_ topic: String) -> TopicCache? { state.withLock { $0.topics[topic] } }
  /// Whether a save started while another was in progress.
  var overlapped: Bool { state.withLock { $0.overlapped } }

  /// Lets the held first save store.
  func release() { held.signal() }

  func load() throws -> [TopicCache] { state.withLock { Array($0.topics.values) } }
  func loadClockSkew() throws -> Int64? { state.withLock { $0.clockSkewMillis } }

  func save(_ topics: [TopicCache], clockSkewMillis: Int64?) throws {
    let save = Save(topics: topics, clockSkewMillis: clockSkewMillis)
    let isFirst = state.withLock { state in
      defer { (state.started, state.inProgress) = (state.started + 1, state.inProgress + 1) }
      if state.inProgress > 0 { state.overlapped = true }
      return state.started == 0
    }
    startedContinuation.yield(save)
    defer { state.withLock { $0.inProgress -= 1 } }
    switch (isFirst, firstSave) {
    case (true, .fails): throw Self.failure
    case (true, .isHeld): held.wait()
    default: break
    }
    state.withLock { state in
      state.saves.append(save)
      for topic in save.topics { state.topics[topic.topic] = topic }
      if let skew = save.clockSkewMillis { state.clockSkewMillis = skew }
    }
    storedContinuation.yield(save)
  }
}
