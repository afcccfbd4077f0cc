import Synchronization

extension Broker {
  /// Gives `topic` a new epoch, because a subscriber's position ahead of its top offset in its
  /// epoch showed that storage lost history the broker had acknowledged (a data directory put
  /// back whole, which nothing in it tells at start): the offsets clients saw would otherwise
  /// be given again, to other changes, and a client resuming from one of them would miss them.
  ///
  /// The new epoch is committed as publishes are, with the next batch (after a failed commit,
  /// with the next that carries a publish): the publishes not committed yet are committed in
  /// it, offsets going on after the last one given; and once it is stored, the idempotency
  /// records of the topic are answered in it (their offsets stay valid), and every subscriber
  /// of the topic gets a snapshot in it (their cards may include some the broker lost), as
  /// every later position in the old epoch does.
  ///
  /// Once per topic while the broker runs: a restore always means a restart, and a client that
  /// learned the new epoch must not be able to force a snapshot on all the topic's subscribers
  /// again and again. Nothing happens for a topic the broker does not hold.
  func startNewEpoch(of topic: String) {
    let startsCommitting = intake.withLock { intake -> Bool in
      guard !intake.newEpochRequested.contains(topic) else { return false }
      // Publishes assigned offsets and not yet committed are in the head's epoch; the new one
      // goes on after the last of them. (Intake's lock, then the topics': the one order.)
      let head =
        intake.heads[topic]
        ?? state.withLock { state in state.topics[topic].map { (epoch: $0.epoch, lastAssigned: $0.topOffset) } }
      guard let head else { return false }
      let epoch = TopicState.epoch(renewing: head.epoch)
      intake.heads[topic] = (epoch, head.lastAssigned)
      intake.publishes.move(topic, to: epoch)
      intake.pendingNewEpochs[topic] = epoch
      intake.newEpochRequested.insert(topic)
      return intake.startsCommitting()
    }
    if startsCommitting { Task { await self.commitPending() } }
  }
}
