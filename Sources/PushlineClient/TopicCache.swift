public import PushlineSchema

/// The client's copy of one topic: its cards, and where the copy stands in the broker's
/// stream — the position to resume from.
public struct TopicCache: Hashable, Sendable {
  public var topic: String
  /// The topic's epoch; `nil` before the first update.
  public var epoch: Int64?
  /// The `throughOffset` of the last applied update.
  public var position: Int64?
  /// When the broker last vouched for the topic (an update or a watermark), in the broker's
  /// Unix milliseconds: the "verified at" time.
  public var verifiedAtMillis: Int64?
  public var cards: [String: CachedCard]

  /// An empty copy of `topic`.
  public init(topic: String, epoch: Int64? = nil, position: Int64? = nil, verifiedAtMillis: Int64? = nil, cards: [String: CachedCard] = [:]) {
    self.topic = topic
    self.epoch = epoch
    self.position = position
    self.verifiedAtMillis = verifiedAtMillis
    self.cards = cards
  }

  /// Where to resume the subscription from.
  public var resumePosition: TopicPosition { TopicPosition(topic: topic, epoch: epoch, offset: position) }

  /// What applying an update did.
  public struct Outcome: Hashable, Sendable {
    /// Cards upserted (new versions) and removed.
    public var upserted: [CachedCard] = []
    public var removed: [String] = []
    /// True when the update was a snapshot, replacing every card.
    public var replaced = false
  }

  /// Applies `update` as the delivery contract says: a snapshot replaces the cards; changes
  /// at or below the position are ignored (offsets may skip — never a loss); the position
  /// becomes the update's `throughOffset`. An update of another epoch without a snapshot is
  /// ignored: the broker always starts a new epoch with one.
  public mutating func apply(_ update: TopicUpdate, receivedAtMillis: Int64) -> Outcome {
    var outcome = Outcome()
    if update.isSnapshot {
      let before = Set(cards.keys)
      cards = [:]
      for change in update.changes {
        guard let card = change.card else { continue }
        cards[change.cardID] = CachedCard(topic: topic, card: card, offset: change.offset ?? 0, receivedAtMillis: receivedAtMillis)
      }
      outcome.replaced = true
      outcome.upserted = Array(cards.values)
      outcome.removed = before.subtracting(cards.keys).sorted()
      epoch = update.epoch
      position = update.throughOffset
    } else {
      guard update.epoch == epoch else { return outcome }
      let floor = position ?? 0
      for change in update.changes {
        guard let offset = change.offset, offset > floor else { continue }
        if let card = change.card {
          let cached = CachedCard(topic: topic, card: card, offset: offset, receivedAtMillis: receivedAtMillis)
          cards[change.cardID] = cached
          outcome.upserted.append(cached)
        } else if cards.removeValue(forKey: change.cardID) != nil {
          outcome.removed.append(change.cardID)
        }
      }
      position = max(floor, update.throughOffset)
    }
    if let serverTime = update.serverTimeMillis { verifiedAtMillis = max(verifiedAtMillis ?? 0, serverTime) }
    return outcome
  }
}
