import CoreMetrics
import PushlineRPC
import PushlineSchema
import Synchronization

/// One subscriber's stream: the topics it follows, its coalescing outbound queue, and who
/// drains it — the transport's pump (woken when the queue gains something, it pulls on the
/// connection's event loop), or a task waiting in ``waitUntilReady()``.
///
/// The broker fills the queue, one commit at a time (so the queue sees a topic's changes in
/// offset order); the drain takes from it as fast as the connection takes the bytes.
/// While the connection is slow, newer card versions replace queued ones (those of a resume's
/// catch-up excepted: they queue behind it), so memory is bounded by the cards of the
/// subscribed topics, never by the publish rate.
public final class Subscription: Sendable {
  struct TopicProgress {
    var epoch: Int64
    /// The highest offset queued so far: once the queue holds nothing for the topic, the
    /// client is complete through it.
    var queuedThrough: Int64
    /// The queue overflowed: the topic's entries were dropped and a fresh snapshot is due.
    var needsSnapshot = false
    /// When an update of the topic (or its watermark) last went out: a topic of the stream
    /// that stays idle that long gets its own watermark, however busy the others are.
    var lastSentMillis: Int64
  }

  struct State {
    var queue = OutboundQueue()
    var topics: [String: TopicProgress] = [:]
    var waiter: CheckedContinuation<Void, any Error>?
    var pump: (any ResponsePump)?
    /// The broker has let go of the subscription: nothing drains it any more.
    var isUnsubscribed = false
    var ended: RPCError?
    /// The topics whose watermark is due: each goes with the next take, unless an update of
    /// the topic does.
    var watermarksDue: Set<String> = []
    /// No topic can fall due for a watermark before this (a topic's last send only moves
    /// later): the ticks before it skip the walk over the topics.
    var nextWatermarkCheckMillis = Int64.min
    /// When the subscription started: its topics' last send until their first.
    let startedMillis: Int64
    /// How many topics need a snapshot: a pull checks this before looking for them.
    var snapshotsDue = 0
    /// The transport said the connection takes bytes, so the queue drains soon: a commit's
    /// changes may then follow the topic's few queued runs without being merged into them.
    /// Until it says so (and with no transport at all) each is coalesced at once.
    var drainsSoon = false

    /// Whether a take would find something: changes, a watermark, a snapshot due, or the end.
    var hasSomethingToSend: Bool {
      !queue.isEmpty || !watermarksDue.isEmpty || snapshotsDue > 0 || ended != nil
    }

    /// Whoever drains the queue, to be woken once the lock is released.
    mutating func drainer() -> Drainer {
      Drainer(waiter: waiter.take(), pump: pump)
    }
  }

  /// Wakes a queue's drain: its waiting task, or its pump.
  struct Drainer {
    var waiter: CheckedContinuation<Void, any Error>?
    var pump: (any ResponsePump)?

    func wake() {
      waiter?.resume()
      pump?.wake()
    }
  }

  /// Who subscribed.
  public let principal: Principal
  let maxQueuedChanges: Int
  /// The largest message the subscriber's connection takes (the limit its handshake agreed):
  /// a take gathers cards of at most half of it. (An update that outgrows it all the same, a
  /// card larger than the limit, is not sent: the transport ends the stream.)
  let maxMessageSize: Int
  let state: Mutex<State>
  /// Counts the topics whose queue passes its bound, as it happens: a subscriber that stopped
  /// reading is seen at once, not when it reads again.
  private let overflows: Counter?

  init(principal: Principal, maxQueuedChanges: Int, maxMessageSize: Int, nowMillis: Int64, overflows: Counter? = nil) {
    self.principal = principal
    self.maxQueuedChanges = maxQueuedChanges
    self.maxMessageSize = maxMessageSize
    self.overflows = overflows
    state = Mutex(State(startedMillis: nowMillis))
  }

  /// The bytes of changes a take gathers at most, past its first entry: half the connection's
  /// message limit leaves the other half for the updates' headers.
  private var maxTakeBytes: Int { min(OutboundQueue.maxTakeBytes, maxMessageSize / 2) }

  /// Queues committed changes of `topic` — the `run` of a commit: distinct cards, each with
  /// its offset, in offset order (commits are fanned out one at a time, coalesced), shared
  /// with the topic's other subscribers; past the queue's bound the topic's entries are
  /// dropped in favour of a snapshot. Changes at or below what the subscription already
  /// queued are skipped: a snapshot taken after the commit was applied (a resynchronization)
  /// holds them.
  /// Returns how many changes replaced a queued older version of their card (nil when the
  /// subscription took none: it ended, or awaits a snapshot), and the drain to wake.
  func enqueue(_ run: EncodedChangeRun, topic: String) -> (coalesced: Int?, drainer: Drainer?) {
    state.withLock { state -> (Int?, Drainer?) in
      guard state.ended == nil, let progress = state.topics[topic], !progress.needsSnapshot else { return (nil, nil) }
      // In offset order: those not queued yet are a suffix.
      let fresh = run.changes.firstIndex { $0.offset ?? .max > progress.queuedThrough } ?? run.count
      let coalesced = queue(run, from: fresh, of: topic, stacking: state.drainsSoon, in: &state)
      return (coalesced, state.drainer())
    }
  }

  /// Queues `run`'s changes from `start` behind what `topic` has queued; past the bound the
  /// topic's entries are dropped for a snapshot. Returns how many queued changes they replaced.
  private func queue(_ run: EncodedChangeRun, from start: Int, of topic: String, stacking: Bool, in state: inout State) -> Int {
    let (appended, coalesced) = state.queue.append(run, from: start, topic: topic, whileFewerThan: maxQueuedChanges, stacking: stacking)
    let overflowed = appended < run.count - start
    if let last = run.changes.last?.offset {
      state.topics.changeValue(forKey: topic) { $0.queuedThrough = max($0.queuedThrough, last) }
    }
    if overflowed {
      overflows?.increment()
      Self.dropQueued(of: topic, forSnapshotIn: &state)
    }
    return coalesced
  }

  /// Drops what `topic` has queued, and makes a fresh snapshot of it due (once, however many
  /// times it is dropped before the snapshot is queued).
  private static func dropQueued(of topic: String, forSnapshotIn state: inout State) {
    state.queue.removeAll(for: topic)
    let wasDue = state.topics.changeValue(forKey: topic) { progress in
      defer { progress.needsSnapshot = true }
      return progress.needsSnapshot
    }
    if wasDue == false { state.snapshotsDue += 1 }
  }

  /// `topic` starts a new epoch, as the broker was shown that it lost history (broker lock
  /// held): what was queued of it is dropped — the client may hold cards that history lacked —
  /// and a snapshot in the new epoch is due. Returns the drain to wake.
  func startNewEpoch(of topic: String) -> Drainer? {
    state.withLock { state -> Drainer? in
      guard state.ended == nil, state.topics[topic] != nil else { return nil }
      Self.dropQueued(of: topic, forSnapshotIn: &state)
      return state.drainer()
    }
  }

  /// The connection stopped taking bytes, or takes them again: while it does not, newer
  /// versions of queued cards replace them at once.
  func connectionWritabilityChanged(_ isWritable: Bool) {
    state.withLock { $0.drainsSoon = isWritable }
  }

  /// How many changes wait in the queue.
  var queuedChanges: Int { state.withLock { $0.queue.changeCount } }

  /// Whether a take now would find something: changes, a watermark, a snapshot due, or the
  /// end. When not, the drain is woken again as soon as there is.
  var hasSomethingToSend: Bool {
    state.withLock { $0.hasSomethingToSend }
  }

  /// Starts following `topic` (broker lock held): `catchUp` brings the client from its
  /// position to `offset`, or `snapshot` (positioned there) replaces its copy; `delta`, the
  /// topic's changes after `offset` (made while they were built), follows them.
  func attach(_ topic: TopicState, through offset: Int64, catchUp: [CardRecord]?, snapshot: EncodedTopicUpdate?, then delta: [CardRecord]) {
    let drainer = state.withLock { state in
      state.topics[topic.name] = TopicProgress(epoch: topic.epoch, queuedThrough: offset, lastSentMillis: state.startedMillis)
      if let snapshot { state.queue.append(snapshot: snapshot) }
      if let catchUp, !catchUp.isEmpty {
        // Queued whole: newer versions of its cards queue behind it rather than replace its
        // changes, so that its last part leaves the client exactly at its offset, complete.
        var update = EncodedTopicUpdate(topic: topic.name, epoch: topic.epoch, throughOffset: offset)
        update.changes = catchUp.map(\.change)
        update.serverTimeMillis = state.startedMillis  // when it was made, as a snapshot's
        state.queue.append(catchUp: update)
      } else if catchUp != nil, delta.isEmpty {
        state.watermarksDue.insert(topic.name)  // nothing to catch up: the position is confirmed at once
      }
      queue(delta, of: topic.name, in: &state)
      return state.drainer()
    }
    drainer.wake()
  }

  /// Starts following `topic` (broker lock held) with a snapshot still to be built: until it
  /// is queued (``resynchronize(_:snapshot:through:then:)``), the topic's commits are skipped
  /// and nothing of the stream is taken.
  func attachAwaitingSnapshot(_ topic: TopicState) {
    state.withLock { state in
      state.topics[topic.name] = TopicProgress(epoch: topic.epoch, queuedThrough: topic.topOffset, needsSnapshot: true, lastSentMillis: state.startedMillis)
      state.snapshotsDue += 1
    }
  }

  /// Queues `delta` (distinct cards in offset order) behind what `topic` has queued, as a
  /// commit's changes are.
  private func queue(_ delta: [CardRecord], of topic: String, in state: inout State) {
    guard !delta.isEmpty else { return }
    _ = queue(EncodedChangeRun(delta.map(\.change)), from: 0, of: topic, stacking: false, in: &state)
  }

  /// Wakes the queue's drain: something may be ready that nothing else announced (a snapshot
  /// queued by a task).
  func wakeDrain() {
    state.withLock { $0.drainer() }.wake()
  }

  /// Whether the stream has ended (``end(with:)``).
  var hasEnded: Bool { state.withLock { $0.ended != nil } }

  /// The topics whose queue overflowed and which need a snapshot.
  var topicsNeedingSnapshot: [String] {
    state.withLock { state in state.snapshotsDue == 0 ? [] : state.topics.filter(\.value.needsSnapshot).map(\.key) }
  }

  /// Queues a fresh snapshot of `topic` after an overflow, or for a start deferred
  /// (``attachAwaitingSnapshot(_:)``), positioned at `offset`, then `delta`, the topic's
  /// changes after it (broker lock held).
  func resynchronize(_ topic: TopicState, snapshot: EncodedTopicUpdate, through offset: Int64, then delta: [CardRecord]) {
    state.withLock { state in
      guard state.topics[topic.name]?.needsSnapshot == true else { return }
      state.snapshotsDue -= 1
      state.topics.changeValue(forKey: topic.name) { progress in
        (progress.needsSnapshot, progress.epoch, progress.queuedThrough) = (false, topic.epoch, offset)
      }
      state.queue.append(snapshot: snapshot)
      queue(delta, of: topic.name, in: &state)
    }
  }

  /// Marks a watermark due for each topic of which nothing was sent for `interval` and
  /// nothing waits, so a client still learns that its cards of a quiet topic are current —
  /// however busy the stream's other topics keep it.
  func markWatermarksDueIfIdle(nowMillis: Int64, intervalMillis: Int64) {
    let drainer = state.withLock { state -> Drainer? in
      guard nowMillis >= state.nextWatermarkCheckMillis else { return nil }
      let before = state.watermarksDue.count
      var next = Int64.max
      for (name, progress) in state.topics {
        let (due, overflow) = progress.lastSentMillis.addingReportingOverflow(intervalMillis)
        if overflow || nowMillis < due {
          next = min(next, overflow ? .max : due)
        } else if progress.needsSnapshot || state.queue.hasEntries(for: name) {
          next = min(next, nowMillis)  // due once what it waits for is sent: look again next tick
        } else {
          state.watermarksDue.insert(name)
          next = min(next, nowMillis &+ intervalMillis)  // sent soon, due again an interval after
        }
      }
      state.nextWatermarkCheckMillis = next
      return state.watermarksDue.count > before ? state.drainer() : nil
    }
    drainer?.wake()
  }

  /// How a stream whose token expired ends.
  static let tokenExpired = RPCError(code: .unauthenticated, message: "the token expired; reconnect with a new one")

  /// Ends the stream with `error` (the token expired, the broker shuts down): the drain's
  /// next take throws it. Returns whether this ended it (false when it had ended already).
  @discardableResult
  func end(with error: RPCError) -> Bool {
    let (drainer, ended) = state.withLock { state in
      guard state.ended == nil else { return (state.drainer(), false) }
      state.ended = error
      return (state.drainer(), true)
    }
    drainer.wake()
    return ended
  }

  /// Hands the queue to the transport's `pump`, woken from now on whenever there is something
  /// to send — at once, for what is already queued. A stream that ended before (and so has
  /// unsubscribed) keeps no pump: the pump holds the subscription, which would hold it forever.
  func drain(with pump: any ResponsePump) {
    let isUnsubscribed = state.withLock { state in
      if !state.isUnsubscribed { state.pump = pump }
      return state.isUnsubscribed
    }
    if !isUnsubscribed { pump.wake() }
  }

  /// Lets go of the pump (which holds the subscription) and refuses later ones.
  func detach() {
    state.withLock { state in
      state.isUnsubscribed = true
      state.pump = nil
    }
  }

  /// Waits until the queue may have something to take (or the stream ended, or a topic needs
  /// its snapshot), for a drain that runs in a task.
  ///
  /// - Throws: `CancellationError`.
  func waitUntilReady() async throws {
    try Task.checkCancellation()
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        let ready = state.withLock { state in
          if Task.isCancelled || state.hasSomethingToSend { return true }
          state.waiter = continuation
          return false
        }
        if ready { continuation.resume() }
      }
    } onCancel: {
      state.withLock { $0.waiter.take() }?.resume(throwing: CancellationError())
    }
  }

  func takeReady(maxChanges: Int, nowMillis: Int64) throws(RPCError) -> [AssembledTopicUpdate]? {
    try state.withLock { state throws(RPCError) -> [AssembledTopicUpdate]? in
      if let ended = state.ended { throw ended }
      // Nothing goes out after the token's expiry, though the broker's tick ends the stream
      // only once a second.
      if principal.expiresAtMillis <= nowMillis {
        state.ended = Self.tokenExpired
        throw Self.tokenExpired
      }
      if state.snapshotsDue > 0 { return [] }
      var updates: [AssembledTopicUpdate] = []
      if !state.queue.isEmpty {
        do {
          let topics = state.topics  // let go of before the table is written below: no copy of it
          updates = state.queue.take(limit: maxChanges, maxBytes: maxTakeBytes) { topics[$0]?.epoch ?? 0 }
        }
        for index in updates.indices {
          let topic = updates[index].base.topic
          // In place (no `_modify` coroutine allocated per delivery), one lookup for both.
          let queuedThrough = state.topics.changeValue(forKey: topic) { progress in
            progress.lastSentMillis = nowMillis
            return progress.queuedThrough
          }
          if updates[index].base.isSnapshot { continue }
          // The last part of a snapshot or of a catch-up is positioned, and complete, at its
          // offset: exact as of when the whole was made, or as of now if nothing newer of its
          // topic follows it (taken now, or still queued). (A rare update: the scan is short.)
          if updates[index].base.isComplete {
            let followed = updates[(index + 1)...].contains { $0.base.topic == topic } || state.queue.hasEntries(for: topic)
            if !followed { updates[index].base.serverTimeMillis = nowMillis }
            continue
          }
          updates[index].base.serverTimeMillis = nowMillis
          // Complete through the topic's last queued offset once nothing of it is left — the
          // client then holds the topic's exact state there; otherwise through this update's
          // last change (what remains supersedes the rest).
          if state.queue.hasEntries(for: topic) {
            updates[index].base.throughOffset = updates[index].lastOffset ?? 0
          } else {
            updates[index].base.throughOffset = queuedThrough ?? 0
            updates[index].base.complete = true
          }
        }
      }
      guard !state.watermarksDue.isEmpty else { return updates.isEmpty ? nil : updates }
      // The due watermarks of the topics with nothing queued, after the others' updates; a
      // topic with something queued, or sent now, is confirmed by its updates.
      let sent = Set(updates.map(\.base.topic))
      for topic in state.watermarksDue.sorted() where !sent.contains(topic) {
        guard let progress = state.topics[topic], !progress.needsSnapshot, !state.queue.hasEntries(for: topic) else { continue }
        var watermark = EncodedTopicUpdate(topic: topic, epoch: progress.epoch, throughOffset: progress.queuedThrough)
        watermark.serverTimeMillis = nowMillis
        watermark.complete = true
        updates.append(AssembledTopicUpdate(watermark))
        state.topics.changeValue(forKey: topic) { $0.lastSentMillis = nowMillis }
      }
      state.watermarksDue = []
      return updates.isEmpty ? nil : updates
    }
  }
}
