import CoreMetrics
import Logging
import PushlineRPC
public import PushlineSchema
import Synchronization

extension Broker {
  /// Applies `request`'s changes to its topic atomically and returns their offsets once they
  /// are durable. Publishes arriving while a commit runs are committed together in the next
  /// one (group commit), so durability costs one storage write per burst, not per publish.
  ///
  /// - Throws: INVALID_ARGUMENT for a bad topic name, an empty idempotency key or one with a NUL byte
  ///   or not in NFC, no or too many changes, an empty cardID or one with a NUL byte or not in
  ///   NFC, a card twice,
  ///   a card whose cardID differs from its change's, a card without a required field, an
  ///   idempotency key used for other changes; PERMISSION_DENIED when `principal` may not
  ///   publish there; RESOURCE_EXHAUSTED (retry after the hint, with the same idempotency key)
  ///   when too many publishes wait for storage; UNAVAILABLE (retry, with the same key) when
  ///   storage failed.
  public func publish(_ request: EncodedPublishRequest, for principal: Principal) async throws -> PublishResponse {
    try await withCheckedThrowingContinuation { continuation in
      publish(request, for: principal, completion: continuation)
    }
  }

  /// ``publish(_:for:)`` for a request built in this process, with its cards decoded.
  public func publish(_ request: PublishRequest, for principal: Principal) async throws -> PublishResponse {
    try await publish(EncodedPublishRequest(encoding: request), for: principal)
  }

  /// ``publish(_:for:)`` without a task: `completion` gets the offsets once the changes are
  /// durable (called by the commit, on its thread) or the error (at once, for a request that
  /// fails validation) — for a transport that answers a call from a callback.
  ///
  /// When no commit is running, this publish starts one, on `executor` if given. A transport
  /// passes its connection's event loop: the commit then begins once the loop has handled the
  /// publishes it read with this one, so a burst is committed (and fanned out) together, and
  /// with the in-memory storage it runs without waking another thread. That first batch — its
  /// apply, its fan-out to every subscriber's queue, its answers — holds the loop meanwhile;
  /// later batches run on the global executor (see `commitPending()`).
  ///
  /// - Parameter isHeldAlready: the publish waited, held in memory, behind its token's first
  ///   check, with those of its connection that came after it: it is taken past the bound on
  ///   publishes waiting for storage (its memory is spent already), so that a refusal cannot
  ///   let the publishes held behind it, taken one by one after it, overtake its retry.
  public func publish(
    _ request: EncodedPublishRequest, for principal: Principal, committingOn executor: (any TaskExecutor)? = nil,
    isHeldAlready: Bool = false, completion: any PublishCompletion
  ) {
    do throws(RPCError) {
      try validate(request, principal)
    } catch {
      configuration.metrics.refusedPublishes.increment()
      return completion.complete(with: .failure(error))
    }
    let now = configuration.nowMillis()
    let window = configuration.idempotencyWindowMillis
    enum Next { case answered(PublishResponse), refused(RPCError), queued, commit }
    let next = intake.withLock { intake -> Next in
      if let key = request.idempotencyKey.map({ PublishRecordKey(topic: request.topic, key: $0) }) {
        if let record = intake.publishRecords.record(of: key, committedSince: now - window) {
          if let original = record.fingerprint, original != PublishFingerprint(of: request).value {
            return .refused(Self.keyReused(key))
          }
          // In the topic's new epoch if it got one since: the offsets are valid in it.
          let epoch = intake.storedNewEpochs[key.topic] ?? record.epoch
          var response = PublishResponse(epoch: epoch, firstOffset: record.firstOffset, lastOffset: record.lastOffset)
          response.replayed = true
          return .answered(response)
        }
        // A retry of a publish not yet committed waits for the original's answer.
        switch intake.publishes.join(key, fingerprint: PublishFingerprint(of: request), completion) {
        case .joined: return .queued
        case .differs: return .refused(Self.keyReused(key))
        case .notInFlight: break
        }
      }
      // Before the topic is looked up: a refused publish leaves nothing behind.
      let byteCount = PendingPublish.byteCount(of: request)
      let inFlight = intake.publishes.byteCount
      guard isHeldAlready || inFlight == 0 || inFlight + byteCount <= configuration.maxInFlightPublishBytes else {
        return .refused(
          RPCError(
            code: .resourceExhausted,
            message: "\(inFlight) bytes of publishes are waiting for storage, limit \(configuration.maxInFlightPublishBytes): retry later",
            retryAfterMillis: 100))
      }
      // A topic published to for the first time since the start: its epoch and top offset
      // come from the topics (the only time a publish takes their lock).
      let head =
        intake.heads[request.topic]
        ?? state.withLock { state in
          let topic = Self.topic(request.topic, in: &state)
          return (topic.epoch, topic.topOffset)
        }
      let first = head.lastAssigned + 1
      let records = request.changes.enumerated().map { index, change in
        CardRecord(cardID: change.cardID, offset: first + Int64(index), card: change.card, changedAtMillis: now)
      }
      intake.heads[request.topic] = (head.epoch, first + Int64(records.count) - 1)
      intake.publishes.append(
        PendingPublish(
          topic: request.topic, epoch: head.epoch, records: records, idempotencyKey: request.idempotencyKey, byteCount: byteCount,
          completion: completion))
      return intake.startsCommitting() ? .commit : .queued
    }
    switch next {
    case .answered(let response): completion.complete(with: .success(response))
    case .refused(let error):
      configuration.metrics.refusedPublishes.increment()
      completion.complete(with: .failure(error))
    case .queued: break
    case .commit: Task(executorPreference: executor) { await self.commitPending() }
    }
  }

  /// The refusal of a publish whose idempotency key, still in its window, came with other
  /// changes: answering it as a replay would drop them while telling the publisher they were
  /// applied.
  private static func keyReused(_ key: PublishRecordKey) -> RPCError {
    RPCError(
      code: .invalidArgument,
      message: "idempotencyKey \"\(key.key)\" was used for other changes to topic \"\(key.topic)\" within the idempotency window: a retry must send the same changes, and new changes need a new key")
  }

  private func validate(_ request: EncodedPublishRequest, _ principal: Principal) throws(RPCError) {
    try TopicName.validate(request.topic)
    guard principal.mayPublish else {
      throw RPCError(code: .permissionDenied, message: "role \(principal.role.rawValue) may not publish")
    }
    guard principal.covers(request.topic) else {
      throw RPCError(code: .permissionDenied, message: "the token does not cover topic \"\(request.topic)\"")
    }
    // Kept by SQLite storage as a key, like a cardID. An empty key would make every later
    // publish to the topic that sends one a replay of the first.
    if let key = request.idempotencyKey, let refusal = Self.refusal(ofKey: key, as: "idempotencyKey") {
      throw RPCError(code: .invalidArgument, message: refusal)
    }
    guard (1...configuration.maxChangesPerPublish).contains(request.changes.count) else {
      throw RPCError(
        code: .invalidArgument,
        message: "a publish carries 1 to \(configuration.maxChangesPerPublish) changes, got \(request.changes.count)")
    }
    var seen = Set<String>()
    for (index, change) in request.changes.enumerated() {
      if let refusal = Self.refusal(ofKey: change.cardID, as: "cardID") {
        throw RPCError(code: .invalidArgument, message: "changes[\(index)]: \(refusal)")
      }
      if let size = change.card?.encodedSize(), size > Self.maxCardSize {
        throw RPCError(code: .invalidArgument, message: "changes[\(index)]: a card of \(size) bytes, limit \(Self.maxCardSize)")
      }
      // (A one-change publish, the common one, needs no set.)
      guard request.changes.count == 1 || seen.insert(change.cardID).inserted else {
        throw RPCError(code: .invalidArgument, message: "changes[\(index)]: card \"\(change.cardID)\" appears twice")
      }
      // (A card published over RPC was refused at decoding already; one built in this
      // process was not.)
      if let path = change.card?.missingRequiredField {
        throw RPCError(code: .invalidArgument, message: "changes[\(index)]: the card lacks its required field \(path)")
      }
      // By bytes: as strings, an ID and its other normal form are equal.
      if let card = change.card, !card.cardID.utf8.elementsEqual(change.cardID.utf8) {
        throw RPCError(
          code: .invalidArgument,
          message: "changes[\(index)]: the card's cardID \"\(card.cardID)\" differs from the change's \"\(change.cardID)\"")
      }
    }
  }

  /// Commits everything pending, batch after batch, until nothing is left; one runs at a time.
  ///
  /// The first batch runs where the committing started (a publishing connection's event loop,
  /// after its read burst). The batches after it, which exist only while publishes keep coming
  /// from elsewhere, run on the global executor: an event loop runs every job queued during
  /// its turn before it reads again, so a committer that stayed would keep that loop from its
  /// sockets for as long as other connections kept it busy.
  ///
  /// Whether there is a next batch is settled before leaving: usually there is none (one
  /// publishing connection's burst was the whole batch), and a hop to the global executor just
  /// to find that out would wake another thread for every commit.
  func commitPending() async {
    guard let (batch, publishes) = takePendingBatch() else { return }
    await commit(batch, publishes)
    guard let (next, nextPublishes) = takePendingBatch() else { return }
    await withTaskExecutorPreference(globalConcurrentExecutor) {
      await commit(next, nextPublishes)
      while let (later, laterPublishes) = takePendingBatch() { await commit(later, laterPublishes) }
    }
  }

  /// How often every topic is looked at for tombstones past the maximum age.
  static let agePruneIntervalMillis: Int64 = 60_000

  /// Queues for commit, at most once per ``agePruneIntervalMillis``, the prunes of every
  /// topic's tombstones past the maximum age (and past the count): a publish's commit prunes
  /// only the topics it touched, and a topic no one publishes to again would keep its
  /// tombstones, and its floor, for ever. A prune whose commit fails is tried again a minute
  /// later.
  func pruneAgedTombstones(nowMillis now: Int64) {
    let due = intake.withLock { intake in
      if let last = intake.lastAgePruneMillis, now - last < Self.agePruneIntervalMillis { return false }
      intake.lastAgePruneMillis = now
      return true
    }
    guard due else { return }
    let (limit, maxAge) = (configuration.maxTombstonesPerTopic, configuration.maxTombstoneAge.milliseconds)
    let prunes = state.withLock { state in
      var prunes: [TombstonePrune] = []
      var index = state.topics.startIndex
      while index != state.topics.endIndex {
        if let prune = state.topics.values[index].tombstonesToPrune(limit: limit, maxAgeMillis: maxAge, nowMillis: now) {
          prunes.append(prune)
        }
        state.topics.formIndex(after: &index)
      }
      return prunes
    }
    guard !prunes.isEmpty else { return }
    let starts = intake.withLock { intake in
      intake.pendingPrunes += prunes
      return intake.startsCommitting()
    }
    if starts { Task { await self.commitPending() } }
  }

  /// Commits `batch`, applies it and answers its `publishes` (or fails them).
  private func commit(_ batch: StorageBatch, _ publishes: [PendingPublish]) async {
    let clock = ContinuousClock()
    let started = clock.now
    do {
      try await storage.commit(batch)
      let elapsed = (clock.now - started).components
      configuration.metrics.commitDuration.recordNanoseconds(elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000)
      configuration.metrics.commitSize.record(publishes.count)
    } catch {
      configuration.metrics.failedCommits.increment()
      configuration.logger.error("commit failed", metadata: ["publishes": "\(publishes.count)", "error": "\(error)"])
      let failure = RPCError(
        code: .unavailable, message: "the publish could not be stored: \(error)", retryAfterMillis: 1000)
      let failed = intake.withLock { intake in
        for prune in batch.prunes {
          intake.failedPrunes[prune.topic, default: TombstonePrune(topic: prune.topic, tombstones: [], floorOffset: 0)]
            .formUnion(prune)
        }
        intake.failedNewEpochs.merge(batch.newEpochs) { _, new in new }
        return intake.publishes.finishCommitting()
      }
      for publish in failed { publish.fail(failure) }
      return
    }
    applyCommitted(batch, publishes)
  }

  /// Takes what is pending for the next commit (under the intake's lock, briefly), and builds
  /// its storage batch outside the lock; `nil` when nothing is left, which ends the committing.
  private func takePendingBatch() -> (StorageBatch, [PendingPublish])? {
    let now = configuration.nowMillis()
    let window = configuration.idempotencyWindowMillis
    typealias Taken = (
      publishes: [PendingPublish], prunes: [TombstonePrune], newEpochs: [String: Int64], oldestKept: Int64?, recordedAt: Int64
    )
    let taken = intake.withLock { intake -> Taken? in
      guard !intake.publishes.pending.isEmpty || !intake.pendingPrunes.isEmpty || !intake.pendingNewEpochs.isEmpty else {
        intake.isCommitting = false
        return nil
      }
      var (prunes, newEpochs) = (intake.pendingPrunes, intake.pendingNewEpochs)
      if !intake.publishes.pending.isEmpty {
        prunes += intake.failedPrunes.values
        newEpochs.merge(intake.failedNewEpochs) { pending, _ in pending }
        (intake.failedPrunes, intake.failedNewEpochs) = ([:], [:])
      }
      defer { (intake.pendingPrunes, intake.pendingNewEpochs) = ([], [:]) }
      // Records are stamped in commit order, never before the last, even when the wall clock
      // steps back: storage forgets them by their stamps, memory in commit order, and the two
      // must agree (or storage forgets, within the window, records that memory keeps).
      let recordedAt = max(now, intake.publishRecords.newestCommitMillis ?? .min)
      return (intake.publishes.startCommitting(), prunes, newEpochs, intake.publishRecords.oldestCommitMillis, recordedAt)
    }
    guard let (publishes, prunes, newEpochs, oldestKept, recordedAt) = taken else { return nil }
    var batch = StorageBatch()
    batch.topics.reserveCapacity(publishes.count)
    var topicIndex: [String: Int] = [:]
    topicIndex.reserveCapacity(publishes.count)
    // By position, here and in `applyCommitted`: a publish taken out of the array whole is a
    // copy, a retain and release of everything it holds, for the few fields a loop reads.
    for position in publishes.indices {
      let (topic, epoch, records) = (publishes[position].topic, publishes[position].epoch, publishes[position].records)
      if let index = topicIndex[topic] {
        batch.topics[index].records += records
        batch.topics[index].topOffset = records.last?.offset ?? batch.topics[index].topOffset
      } else {
        topicIndex[topic] = batch.topics.count
        batch.topics.append(TopicChanges(topic: topic, epoch: epoch, topOffset: records.last?.offset ?? 0, records: records))
      }
      if let key = publishes[position].idempotencyKey, let first = records.first, let last = records.last {
        batch.publishRecords.append(
          PublishRecord(
            topic: topic, key: key, epoch: epoch, firstOffset: first.offset, lastOffset: last.offset, committedAtMillis: recordedAt,
            fingerprint: PublishFingerprint(of: records).value))
      }
    }
    batch.prunes = prunes
    batch.newEpochs = newEpochs
    // Storage forgets what memory has (the window, or past the most kept, the oldest records).
    batch.forgetPublishRecordsBeforeMillis = max(now - window, oldestKept ?? .min)
    batch.maxPublishRecordsToForget = max(Self.publishRecordsForgottenPerCommit, 2 * batch.publishRecords.count)
    return (batch, publishes)
  }

  /// The fewest expired idempotency records a commit forgets, in memory and in storage, when
  /// there are that many: a few at a time, so that no commit pays for a minute's worth. A commit
  /// that records more forgets twice as many as it records, so forgetting keeps up with any rate.
  static let publishRecordsForgottenPerCommit = 1024

  /// `records` (in offset order) without those a later record of the same card supersedes:
  /// what a queue holds after taking them one by one, since a newer version replaces an older
  /// one and moves to the back. So a batch is coalesced once, not once per subscriber.
  static func latestVersions(of records: [CardRecord]) -> [CardRecord] {
    guard records.count > 1 else { return records }
    // A few records (a topic's share of one commit, usually): compared pairwise, with no table.
    if records.count <= 8 {
      func isSuperseded(_ index: Int) -> Bool { records[(index + 1)...].contains { $0.cardID == records[index].cardID } }
      guard records.indices.contains(where: isSuperseded) else { return records }
      return records.indices.filter { !isSuperseded($0) }.map { records[$0] }
    }
    var last: [String: Int] = [:]
    last.reserveCapacity(records.count)
    for (index, record) in records.enumerated() { last[record.cardID] = index }
    guard last.count < records.count else { return records }
    return records.indices.filter { last[records[$0].cardID] == $0 }.map { records[$0] }
  }

  /// A topic's subscribers, as the topics' state holds them.
  private typealias Subscribers = [ObjectIdentifier: Subscription].Values

  /// Makes a committed batch visible: applies it to the topics, remembers idempotency keys,
  /// schedules tombstone prunes for the topics it touched, fans the changes out, and answers.
  ///
  /// The fan-out runs after the topics' lock is released, so that publishes and subscribes
  /// are not held up while a thousand queues take their changes. That keeps each queue's
  /// changes in offset order: commits are applied one at a time, and a subscriber that
  /// attaches after the topics were updated got these changes in its catch-up or snapshot
  /// and is not among the subscribers collected here.
  ///
  /// The answers go to the publishers and to the retries that joined them during the commit.
  private func applyCommitted(_ batch: StorageBatch, _ publishes: [PendingPublish]) {
    let now = configuration.nowMillis()
    var resynchronized: [Subscription.Drainer] = []
    let (prunes, fanOut) = state.withLock {
      state -> ([TombstonePrune], [(topic: String, changes: EncodedChangeRun, superseded: Int, subscribers: Subscribers)]) in
      for position in publishes.indices {
        let topic = publishes[position].topic
        state.topics.changeValue(forKey: topic, default: TopicState(name: topic, epoch: publishes[position].epoch)) {
          $0.apply(publishes[position].records)
        }
      }
      for prune in batch.prunes { state.topics.changeValue(forKey: prune.topic) { $0.apply(prune) } }
      // Before the fan-out is collected: the subscribers of a topic in a new epoch await its
      // snapshot, which holds this batch's changes.
      for (name, epoch) in batch.newEpochs where state.topics[name] != nil {
        state.topics[name]?.epoch = epoch
        configuration.metrics.newEpochs.increment()
        for subscription in state.subscribers[name].map(Array.init) ?? [] {
          if let drainer = subscription.value.startNewEpoch(of: name) { resynchronized.append(drainer) }
        }
      }
      let prunes = batch.topics.compactMap { changes in
        state.topics[changes.topic]?.tombstonesToPrune(
          limit: configuration.maxTombstonesPerTopic, maxAgeMillis: configuration.maxTombstoneAge.milliseconds,
          nowMillis: now)
      }
      let fanOut = batch.topics.compactMap { topic -> (String, EncodedChangeRun, Int, Subscribers)? in
        guard let subscribers = state.subscribers[topic.topic] else { return nil }
        // Coalesced once for all subscribers, as each queue would (see `latestVersions`), and
        // shared by their queues, encoded once.
        let changes = EncodedChangeRun(Self.latestVersions(of: topic.records).map(\.change))
        // The table's values, not an array of them: no copy (a subscribe meanwhile copies the table).
        return (topic.topic, changes, topic.records.count - changes.count, subscribers.values)
      }
      return (prunes, fanOut)
    }
    let committed = intake.withLock { intake in
      for record in batch.publishRecords { intake.publishRecords.insert(record) }
      if let cutoff = batch.forgetPublishRecordsBeforeMillis {
        intake.publishRecords.forget(
          committedBefore: cutoff, keepingAtMost: configuration.maxPublishRecords, atMost: batch.maxPublishRecordsToForget)
      }
      intake.pendingPrunes += prunes
      intake.storedNewEpochs.merge(batch.newEpochs) { _, new in new }
      return intake.publishes.finishCommitting()
    }
    // Per topic, the whole batch's changes in offset order: one enqueue and one wake per
    // subscriber per commit, however many publishes the commit grouped.
    var coalesced = 0
    var drainers: [Subscription.Drainer] = []
    drainers.reserveCapacity(fanOut.count)
    for (topic, changes, superseded, subscribers) in fanOut {
      for subscription in subscribers {
        let (replaced, drainer) = subscription.enqueue(changes, topic: topic)
        if let replaced { coalesced += replaced + superseded }
        if let drainer { drainers.append(drainer) }
      }
    }
    // Counted before anyone hears of them: a scrape after an answer or a delivery sees them.
    configuration.metrics.publishes.increment(by: publishes.count)
    configuration.metrics.publishedChanges.increment(by: batch.topics.indices.reduce(0) { $0 + batch.topics[$1].records.count })
    if coalesced > 0 { configuration.metrics.coalescedChanges.increment(by: coalesced) }
    // The publishers once every subscriber's queue holds the changes (a subscriber in the same
    // process reads its writes), and before the drains are woken: a publisher refills its
    // window as its answers arrive, so its answers should not wait behind the writes of a
    // thousand subscribers on its event loop. (A connection that also subscribes still gets
    // its update first: its transport sends a stream's queued responses ahead of the answers.)
    for position in committed.indices { committed[position].answerCommitted() }
    for drainer in resynchronized { drainer.wake() }
    for drainer in drainers { drainer.wake() }
  }
}
