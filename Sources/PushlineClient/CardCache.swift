import PushlineRPC
public import PushlineSchema
import Synchronization

/// The client's cards per topic, in memory, written behind to a ``CachePersistence``:
/// updates apply at memory speed, and ``flush()`` stores the changed topics in one atomic
/// write, cards and positions together, with the clock skew when it changed.
public final class CardCache: Sendable {
  private struct State {
    var topics: [String: TopicCache]
    var dirty: Set<String> = []
    var clockSkewMillis: Int64?
    var isClockSkewDirty = false
  }

  private let persistence: (any CachePersistence)?
  private let state: Mutex<State>
  /// Held through a flush: flushes write one at a time, so an older copy of a topic, taken by
  /// one flush, cannot be written after a newer one taken by the next.
  private let writing = Mutex(())

  /// A cache loaded from `persistence` (or empty and memory-only when `nil`).
  ///
  /// - Throws: whatever `persistence` throws while loading.
  public init(persistence: (any CachePersistence)?) throws {
    self.persistence = persistence
    let topics = try persistence?.load() ?? []
    state = Mutex(
      State(topics: Dictionary(uniqueKeysWithValues: topics.map { ($0.topic, $0) }), clockSkewMillis: try persistence?.loadClockSkew()))
  }

  /// The broker's clock minus the client's, as last noted (see ``noteClockSkew(_:)``), or as
  /// stored when none was noted since the cache was loaded.
  public var clockSkewMillis: Int64? { state.withLock { $0.clockSkewMillis } }

  /// Notes the broker's clock minus the client's, written behind with the cards. A skew within
  /// a second of the one noted changes nothing: expiry is in whole seconds, and every update's
  /// sample differs by a few milliseconds, which would add a write to every flush.
  public func noteClockSkew(_ skewMillis: Int64) {
    state.withLock { state in
      if let noted = state.clockSkewMillis {
        let (difference, overflow) = skewMillis.subtractingReportingOverflow(noted)
        guard overflow || difference.magnitude >= 1000 else { return }
      }
      state.clockSkewMillis = skewMillis
      state.isClockSkewDirty = true
    }
  }

  /// Applies `update` to its topic (see ``TopicCache/apply(_:receivedAtMillis:)``).
  @discardableResult
  public func apply(_ update: TopicUpdate, receivedAtMillis: Int64) -> TopicCache.Outcome {
    state.withLock { state in
      let outcome = state.topics.changeValue(forKey: update.topic, default: TopicCache(topic: update.topic)) {
        $0.apply(update, receivedAtMillis: receivedAtMillis)
      }
      state.dirty.insert(update.topic)
      return outcome
    }
  }

  /// Writes the topics, and the clock skew, changed since the last flush, in one save of the
  /// persistence's (none when nothing changed).
  ///
  /// - Throws: whatever the persistence throws; the topics and the skew it did not write stay
  ///   dirty for the next flush.
  public func flush() throws {
    guard let persistence else { return }
    try writing.withLock { _ in try write(to: persistence) }
  }

  /// Writes what changed since the last write, in one save; see ``flush()``.
  private func write(to persistence: any CachePersistence) throws {
    let (changed, skew) = state.withLock { state in
      defer { (state.dirty, state.isClockSkewDirty) = ([], false) }
      return (state.dirty.compactMap { state.topics[$0] }, state.isClockSkewDirty ? state.clockSkewMillis : nil)
    }
    guard !changed.isEmpty || skew != nil else { return }
    do {
      try persistence.save(changed, clockSkewMillis: skew)
    } catch {
      state.withLock { state in
        state.dirty.formUnion(changed.map(\.topic))
        if skew != nil { state.isClockSkewDirty = true }
      }
      throw error
    }
  }

  /// Where to resume each of `topics`.
  public func positions(for topics: [String]) -> [TopicPosition] {
    state.withLock { state in topics.map { state.topics[$0]?.resumePosition ?? TopicPosition(topic: $0) } }
  }

  /// A topic's copy, if the cache has one.
  public func topic(_ name: String) -> TopicCache? { state.withLock { $0.topics[name] } }

  /// Every card of `topics`.
  public func cards(in topics: [String]) -> [CachedCard] {
    state.withLock { state in topics.flatMap { state.topics[$0]?.cards.values.map { $0 } ?? [] } }
  }
}
