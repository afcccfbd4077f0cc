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
  /// - Throws: INVALID_ARGUMENT for a bad topic name, no or too many changes, a card twice,
  ///   a card whose cardID differs from its change's; PERMISSION_DENIED when `principal` may
  ///   not publish there; UNAVAILABLE (retry, with the same idempotency key) when storage failed.
  public func publish(_ request: PublishRequest, for principal: Principal) async throws -> PublishResponse {
    try validate(request, principal)
    let now = configuration.nowMillis()
    let window = configuration.idempotencyWindow.milliseconds
    return try await withCheckedThrowingContinuation { continuation in
      enum Next { case answered(PublishResponse), queued, commit }
      let next = state.withLock { state -> Next in
        if let key = request.idempotencyKey {
          if let record = state.publishRecords[PublishRecordKey(topic: request.topic, key: key)],
            record.committedAtMillis >= now - window
          {
            var response = PublishResponse(epoch: record.epoch, firstOffset: record.firstOffset, lastOffset: record.lastOffset)
            response.replayed = true
            return .answered(response)
          }
          if let index = state.pending.firstIndex(where: { $0.topic == request.topic && $0.idempotencyKey == key }) {
            state.pending[index].waiters.append((continuation, true))
            return .queued
          }
        }
        let topic = Self.topic(request.topic, in: &state)
        let first = (state.lastAssigned[topic.name] ?? topic.topOffset) + 1
        let records = request.changes.enumerated().map { index, change in
          CardRecord(cardID: change.cardID, offset: first + Int64(index), card: change.card, changedAtMillis: now)
        }
        state.lastAssigned[topic.name] = first + Int64(records.count) - 1
        state.pending.append(
          PendingPublish(
            topic: topic.name, epoch: topic.epoch, records: records, idempotencyKey: request.idempotencyKey,
            waiters: [(continuation, false)]))
        guard !state.isCommitting else { return .queued }
        state.isCommitting = true
        return .commit
      }
      switch next {
      case .answered(let response): continuation.resume(returning: response)
      case .queued: break
      case .commit: Task { await self.commitPending() }
      }
    }
  }

  private func validate(_ request: PublishRequest, _ principal: Principal) throws(RPCError) {
    try TopicName.validate(request.topic)
    guard principal.mayPublish else {
      throw RPCError(code: .permissionDenied, message: "role \(principal.role.rawValue) may not publish")
    }
    guard principal.covers(request.topic) else {
      throw RPCError(code: .permissionDenied, message: "the token does not cover topic \"\(request.topic)\"")
    }
    guard (1...configuration.maxChangesPerPublish).contains(request.changes.count) else {
      throw RPCError(
        code: .invalidArgument,
        message: "a publish carries 1 to \(configuration.maxChangesPerPublish) changes, got \(request.changes.count)")
    }
    var seen = Set<String>()
    for (index, change) in request.changes.enumerated() {
      guard !change.cardID.isEmpty else {
        throw RPCError(code: .invalidArgument, message: "changes[\(index)]: empty cardID")
      }
      guard seen.insert(change.cardID).inserted else {
        throw RPCError(code: .invalidArgument, message: "changes[\(index)]: card \"\(change.cardID)\" appears twice")
      }
      if let card = change.card, card.cardID != change.cardID {
        throw RPCError(
          code: .invalidArgument,
          message: "changes[\(index)]: the card's cardID \"\(card.cardID)\" differs from the change's \"\(change.cardID)\"")
      }
    }
  }

  /// Commits everything pending, batch after batch, until nothing is left; one runs at a time.
  private func commitPending() async {
    let clock = ContinuousClock()
    while let (batch, publishes) = takePendingBatch() {
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
        for publish in publishes { for waiter in publish.waiters { waiter.continuation.resume(throwing: failure) } }
        continue
      }
      applyCommitted(batch, publishes)
      for publish in publishes {
        for waiter in publish.waiters { waiter.continuation.resume(returning: publish.response(replayed: waiter.isRetry)) }
      }
    }
  }

  private func takePendingBatch() -> (StorageBatch, [PendingPublish])? {
    let now = configuration.nowMillis()
    return state.withLock { state in
      guard !state.pending.isEmpty || !state.pendingPrunes.isEmpty else {
        state.isCommitting = false
        return nil
      }
      let publishes = state.pending
      var batch = StorageBatch()
      var topicIndex: [String: Int] = [:]
      for publish in publishes {
        if let index = topicIndex[publish.topic] {
          batch.topics[index].records += publish.records
          batch.topics[index].topOffset = publish.records.last?.offset ?? batch.topics[index].topOffset
        } else {
          topicIndex[publish.topic] = batch.topics.count
          batch.topics.append(
            TopicChanges(
              topic: publish.topic, epoch: publish.epoch, topOffset: publish.records.last?.offset ?? 0,
              records: publish.records))
        }
        if let key = publish.idempotencyKey, let first = publish.records.first, let last = publish.records.last {
          batch.publishRecords.append(
            PublishRecord(
              topic: publish.topic, key: key, epoch: publish.epoch, firstOffset: first.offset, lastOffset: last.offset,
              committedAtMillis: now))
        }
      }
      batch.prunes = state.pendingPrunes
      if now - state.lastRecordCleanupMillis >= configuration.idempotencyWindow.milliseconds / 10 {
        batch.forgetPublishRecordsBeforeMillis = now - configuration.idempotencyWindow.milliseconds
      }
      state.pending = []
      state.pendingPrunes = []
      return (batch, publishes)
    }
  }

  /// `records` (in offset order) without those a later record of the same card supersedes:
  /// what a queue holds after taking them one by one, since a newer version replaces an older
  /// one and moves to the back. So a batch is coalesced once, not once per subscriber.
  static func latestVersions(of records: [CardRecord]) -> [CardRecord] {
    guard records.count > 1 else { return records }
    var last: [String: Int] = [:]
    for (index, record) in records.enumerated() { last[record.cardID] = index }
    guard last.count < records.count else { return records }
    return records.indices.filter { last[records[$0].cardID] == $0 }.map { records[$0] }
  }

  /// Makes a committed batch visible: applies it to the topics, fans the changes out,
  /// remembers idempotency keys, and schedules tombstone prunes for the topics it touched.
  private func applyCommitted(_ batch: StorageBatch, _ publishes: [PendingPublish]) {
    let now = configuration.nowMillis()
    var coalesced = 0
    var drainers: [Subscription.Drainer] = []
    state.withLock { state in
      for publish in publishes {
        state.topics[publish.topic, default: TopicState(name: publish.topic, epoch: publish.epoch)].apply(publish.records)
      }
      // Per topic, the whole batch's changes in offset order: one enqueue and one wake per
      // subscriber per commit, however many publishes the commit grouped.
      for topic in batch.topics {
        guard let subscribers = state.subscribers[topic.topic] else { continue }
        // Coalesced once for all subscribers, as each queue would (see `latestVersions`).
        let changes = Self.latestVersions(of: topic.records).map(\.change)
        for subscription in subscribers.values {
          let (replaced, drainer) = subscription.enqueue(changes, topic: topic.topic)
          if let replaced { coalesced += replaced + topic.records.count - changes.count }
          if let drainer { drainers.append(drainer) }
        }
      }
      for prune in batch.prunes { state.topics[prune.topic]?.apply(prune) }
      if let cutoff = batch.forgetPublishRecordsBeforeMillis {
        state.publishRecords = state.publishRecords.filter { $0.value.committedAtMillis >= cutoff }
        state.lastRecordCleanupMillis = now
      }
      for record in batch.publishRecords {
        state.publishRecords[PublishRecordKey(topic: record.topic, key: record.key)] = record
      }
      for changes in batch.topics {
        if let prune = state.topics[changes.topic]?.tombstonesToPrune(
          limit: configuration.maxTombstonesPerTopic, maxAgeMillis: configuration.maxTombstoneAge.milliseconds,
          nowMillis: now)
        {
          state.pendingPrunes.append(prune)
        }
      }
    }
    for drainer in drainers { drainer.wake() }
    configuration.metrics.publishes.increment(by: publishes.count)
    configuration.metrics.publishedChanges.increment(by: publishes.reduce(0) { $0 + $1.records.count })
    if coalesced > 0 { configuration.metrics.coalescedChanges.increment(by: coalesced) }
  }
}
