public import PushlineSchema

/// The client's copy of one topic: its cards, and where the copy stands in the broker's
/// stream — the position to resume from.
public struct TopicCache: Hashable, Sendable {
  public var topic: String
  /// The topic's epoch; `nil` before the first update.
  public var epoch: Int64?
  /// The `throughOffset` of the last applied update.
  public var position: Int64?
  /// When the broker last vouched for the topic (a complete update, a watermark or a
  /// snapshot), in the broker's Unix milliseconds: the "verified at" time.
  public var verifiedAtMillis: Int64?
  public var cards: [String: CachedCard]
  /// While a snapshot sent in parts arrives: the offset the whole reaches. `nil` otherwise.
  public var snapshotThroughOffset: Int64?
  /// While a snapshot sent in parts arrives: the cards held before it that no part or change
  /// has brought again yet. They stay in ``cards`` — shown as they were, rather than vanishing
  /// and coming back with a later part — and go at the first complete update (the copy is then
  /// exact) once the position reaches ``snapshotThroughOffset``, as the snapshot's removals:
  /// before that, a card changed after the snapshot may still be on its way, above its end
  /// (a resume's catch-up brings each card at its latest version). Meanwhile ``verifiedAtMillis``
  /// stays where it was, since these cards are no fresher. A copy stored with its position
  /// must be stored with these too: resuming from the position does not bring their removals.
  public var awaitingSnapshot: Set<String>

  /// A copy of `topic`, empty unless given its state.
  public init(
    topic: String, epoch: Int64? = nil, position: Int64? = nil, verifiedAtMillis: Int64? = nil, cards: [String: CachedCard] = [:],
    snapshotThroughOffset: Int64? = nil, awaitingSnapshot: Set<String> = []
  ) {
    self.topic = topic
    self.epoch = epoch
    self.position = position
    self.verifiedAtMillis = verifiedAtMillis
    self.cards = cards
    self.snapshotThroughOffset = snapshotThroughOffset
    self.awaitingSnapshot = awaitingSnapshot
  }

  /// Where to resume the subscription from.
  public var resumePosition: TopicPosition { TopicPosition(topic: topic, epoch: epoch, offset: position) }

  /// What applying an update did, as its net effect: each card's last change in the update
  /// counts, so a card it brings and then takes away is only removed, and one it takes away
  /// and brings back is only upserted, at the version it brought last.
  public struct Outcome: Hashable, Sendable {
    /// The cards the update brought, at their new versions, in the order it brought them.
    public var upserted: [CachedCard] = []
    /// The IDs of the cards the update took away, each once.
    public var removed: [String] = []
    /// True when the update was a snapshot, replacing every card (for a snapshot in parts,
    /// its cards left out stay until the rest has arrived).
    public var replaced = false
  }

  /// Applies `update` as the delivery contract says: a snapshot replaces the cards; changes
  /// at or below the position, or below the version of the card already held, are ignored
  /// (offsets may skip — never a loss); the position
  /// becomes the update's `throughOffset`. An update of another epoch without a snapshot is
  /// ignored: the broker always starts a new epoch with one. The first part of a snapshot
  /// sent in parts keeps the cards it leaves out until the position reaches its
  /// `snapshotThroughOffset` and the copy is complete (see ``awaitingSnapshot``).
  public mutating func apply(_ update: TopicUpdate, receivedAtMillis: Int64) -> Outcome {
    var outcome = Outcome()
    if update.isSnapshot {
      var held = cards
      cards = [:]
      for change in update.changes {
        guard let card = change.card else { continue }
        let cached = CachedCard(topic: topic, card: card, offset: change.offset ?? 0, receivedAtMillis: receivedAtMillis)
        cards[change.cardID] = cached
        held[change.cardID] = nil
        outcome.upserted.append(cached)
      }
      outcome.replaced = true
      epoch = update.epoch
      position = update.throughOffset
      if let through = update.snapshotThroughOffset, through > update.throughOffset, !held.isEmpty {
        cards.merge(held) { part, _ in part }
        awaitingSnapshot = Set(held.keys)
        snapshotThroughOffset = through
      } else {
        outcome.removed = held.keys.sorted()
        awaitingSnapshot = []
        snapshotThroughOffset = nil
      }
    } else {
      guard update.epoch == epoch else { return outcome }
      let floor = position ?? 0
      for change in update.changes {
        guard let offset = change.offset, offset > floor else { continue }
        // A version older than the one held (a broker that sent a card's changes out of order)
        // does not replace it; a card awaiting a snapshot holds a version of before it.
        if !awaitingSnapshot.contains(change.cardID), let held = cards[change.cardID], held.offset >= offset { continue }
        awaitingSnapshot.remove(change.cardID)
        if let card = change.card {
          let cached = CachedCard(topic: topic, card: card, offset: offset, receivedAtMillis: receivedAtMillis)
          cards[change.cardID] = cached
          outcome.upserted.append(cached)
        } else if cards.removeValue(forKey: change.cardID) != nil {
          outcome.removed.append(change.cardID)
        }
      }
      let reached = max(floor, update.throughOffset)
      position = reached
      if let through = snapshotThroughOffset, reached >= through && update.isComplete || awaitingSnapshot.isEmpty {
        for cardID in awaitingSnapshot.sorted() where cards.removeValue(forKey: cardID) != nil { outcome.removed.append(cardID) }
        awaitingSnapshot = []
        snapshotThroughOffset = nil
      }
    }
    // The net effect: a version superseded or taken away later in the update is no upsert,
    // and a card brought back later no removal.
    outcome.upserted.removeAll { cards[$0.card.cardID]?.offset != $0.offset }
    var removed = Set<String>()
    outcome.removed.removeAll { cards[$0] != nil || !removed.insert($0).inserted }
    // Verified at the update's time only when no card shown is older than that: after a
    // complete update (a watermark, the end of a backlog or catch-up) or a snapshot — not a
    // piece of a catch-up after hours away, whose other cards are still hours old — and while
    // no card awaits a snapshot, as those are only as fresh as they were. The latest such time,
    // not the largest: a broker clock set back, or a broken clock's time kept before, must not
    // stay ahead of it.
    if let serverTime = update.serverTimeMillis, update.isComplete || update.isSnapshot, snapshotThroughOffset == nil {
      verifiedAtMillis = serverTime
    }
    return outcome
  }
}
