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
  /// The commit runs on a publisher's own task — the one that finds no commit running, or,
  /// when a commit ends with more pending, one of the publishers waiting — so a publish never
  /// waits for a task to be scheduled on another thread.
  ///
  /// - Throws: INVALID_ARGUMENT for a bad topic name, no or too many changes, a card twice,
  ///   a card whose cardID differs from its change's; PERMISSION_DENIED when `principal` may
  ///   not publish there; UNAVAILABLE (retry, with the same idempotency key) when storage failed.
  public func publish(_ request: PublishRequest, for principal: Principal) async throws -> PublishResponse {
    try validate(request, principal)
    let now = configuration.nowMillis()
    let window = configuration.idempotencyWindow.milliseconds
    let turn = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PublishTurn, any Error>) in
      enum Next { case answered(PublishResponse), queued, lead }
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
            state.pending[index].waiters.append(.task(continuation, isRetry: true))
            return .queued
          }
        }
        let topic = Self.topic(request.topic, in: &state)
        let first = (state.lastAssigned[topic.name] ?? topic.topOffset) + 1
        let records = request.changes.enumerated().map { index, change in
          CardRecord(cardID: change.cardID, offset: first + Int64(index), card: change.card, changedAtMillis: now)
        }
        state.lastAssigned[topic.name] = first + Int64(records.count) - 1
        let leads = !state.isCommitting
        state.isCommitting = true
        state.pending.append(
          PendingPublish(
            topic: topic.name, epoch: topic.epoch, records: records, idempotencyKey: request.idempotencyKey,
            waiters: [leads ? .leader(isRetry: false) : .task(continuation, isRetry: false)]))
        return leads ? .lead : .queued
      }
      switch next {
      case .answered(let response): continuation.resume(returning: .answered(response))
      case .queued: break
      case .lead: continuation.resume(returning: .lead)
      }
    }
    switch turn {
    case .answered(let response): return response
    case .lead: return try await commitPending().get()
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

  /// Commits what is pending, on the leading publisher's task, and returns that publisher's
  /// own answer: the first batch holds its publish. Batches of tombstone prunes alone follow
  /// at once; when publishes are pending after a batch, a waiting publisher is resumed to lead
  /// the next commit, so that no publisher's answer waits for others' commits.
  private func commitPending() async -> Result<PublishResponse, RPCError> {
    let clock = ContinuousClock()
    var own: Result<PublishResponse, RPCError>?
    while let (batch, publishes) = takePendingBatch() {
      let started = clock.now
      let outcome: Result<Void, RPCError>
      do {
        try await storage.commit(batch)
        let elapsed = (clock.now - started).components
        configuration.metrics.commitDuration.recordNanoseconds(elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000)
        configuration.metrics.commitSize.record(publishes.count)
        applyCommitted(batch, publishes)
        outcome = .success(())
      } catch {
        configuration.metrics.failedCommits.increment()
        configuration.logger.error("commit failed", metadata: ["publishes": "\(publishes.count)", "error": "\(error)"])
        outcome = .failure(RPCError(code: .unavailable, message: "the publish could not be stored: \(error)", retryAfterMillis: 1000))
      }
      for publish in publishes {
        for waiter in publish.waiters {
          switch (waiter, outcome) {
          case (.task(let continuation, let isRetry), .success):
            continuation.resume(returning: .answered(publish.response(replayed: isRetry)))
          case (.task(let continuation, _), .failure(let failure)):
            continuation.resume(throwing: failure)
          case (.leader(let isRetry), .success):
            own = .success(publish.response(replayed: isRetry))
          case (.leader, .failure(let failure)):
            own = .failure(failure)
          }
        }
      }
      switch nextCommit() {
      case .none: return own ?? Self.notInItsCommit
      case .prunes: continue
      case .handOver(let leader):
        leader.resume(returning: .lead)
        return own ?? Self.notInItsCommit
      }
    }
    return own ?? Self.notInItsCommit
  }

  private static let notInItsCommit = Result<PublishResponse, RPCError>.failure(
    RPCError(code: .internal, message: "the publish was not in the commit it led"))

  /// Who commits next, after a batch.
  private enum NextCommit {
    /// Nothing is pending: commits stop until the next publish.
    case none
    /// Only tombstone prunes are pending: this task commits them too.
    case prunes
    /// Publishes are pending: this publisher leads the next commit.
    case handOver(CheckedContinuation<PublishTurn, any Error>)
  }

  /// Decides who commits next (under the lock, so that a publish arriving meanwhile either
  /// finds the commits stopped and leads, or is in what the next leader takes); a publisher
  /// handed the lead has its waiter turned into the leader's.
  private func nextCommit() -> NextCommit {
    state.withLock { state in
      for index in state.pending.indices {
        for (position, waiter) in state.pending[index].waiters.enumerated() {
          guard case .task(let continuation, let isRetry) = waiter else { continue }
          state.pending[index].waiters[position] = .leader(isRetry: isRetry)
          return .handOver(continuation)
        }
      }
      // Every pending publish has a publisher waiting, so none is pending here.
      guard state.pendingPrunes.isEmpty else { return .prunes }
      state.isCommitting = false
      return .none
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

  /// Makes a committed batch visible: applies it to the topics, fans the changes out,
  /// remembers idempotency keys, and schedules tombstone prunes for the topics it touched.
  private func applyCommitted(_ batch: StorageBatch, _ publishes: [PendingPublish]) {
    let now = configuration.nowMillis()
    var coalesced = 0
    state.withLock { state in
      for publish in publishes {
        state.topics[publish.topic, default: TopicState(name: publish.topic, epoch: publish.epoch)].apply(publish.records)
        guard let subscribers = state.subscribers[publish.topic] else { continue }
        for subscription in subscribers.values {
          for record in publish.records where subscription.enqueue(record, topic: publish.topic) { coalesced += 1 }
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
    configuration.metrics.publishes.increment(by: publishes.count)
    configuration.metrics.publishedChanges.increment(by: publishes.reduce(0) { $0 + $1.records.count })
    if coalesced > 0 { configuration.metrics.coalescedChanges.increment(by: coalesced) }
  }
}
