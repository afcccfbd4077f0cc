import PushlineSchema

/// The publish load the crash test kills a broker under: every publisher owns three cards
/// on each topic and, publish after publish, brings one of them back, updates another and
/// removes the third, every publish with an idempotency key of its own — so that upserts,
/// removals and the keys all have to survive the kill.
enum CrashLoad {
  static let topics = (0..<4).map { "driver/\($0)" }
  static let cardsPerTopic = 3

  /// Publisher `publisher`'s publish number `number` (0, 1, 2, …): to topic `number % 4`, in
  /// its round `r = number / 4` there, an upsert of its card `r % 3` (new, or removed in the
  /// round before), an update of card `(r + 2) % 3` and the removal of card `(r + 1) % 3` (both
  /// upserted in the rounds before); the first two rounds leave out what has no card yet.
  /// A card's versions are the numbers of the publishes that upserted it.
  static func publish(_ number: Int, by publisher: Int) -> PublishRequest {
    let round = number / topics.count
    func cardID(_ slot: Int) -> String { "p\(publisher)-\(slot % cardsPerTopic)" }
    func upsert(_ slot: Int) -> CardChange {
      var card = TrackerCard(cardID: cardID(slot), priority: Double(number), isValid: true)
      card.lastUpdatedAt = Int64(number)
      return CardChange(upserting: card)
    }
    var changes = [upsert(round)]
    if round >= 1 { changes.append(upsert(round + 2)) }
    if round >= 2 { changes.append(CardChange(removing: cardID(round + 1))) }
    return PublishRequest(topic: topics[number % topics.count], changes: changes, idempotencyKey: "p\(publisher)-\(number)")
  }

  /// The cards, by topic and cardID, that `publishes` leave when applied in order.
  static func cards(after publishes: some Sequence<PublishRequest>) -> [String: [String: TrackerCard]] {
    var cards: [String: [String: TrackerCard]] = [:]
    for publish in publishes {
      for change in publish.changes { cards[publish.topic, default: [:]][change.cardID] = change.card }
    }
    return cards
  }
}

/// One publisher's publishes in the order it sent them, one at a time: those acknowledged
/// (a prefix) and at most one more, whose answer the kill cut off.
struct PublisherLog {
  var sent: [PublishRequest] = []
  var acknowledgements: [PublishResponse] = []

  /// The acknowledged publishes, each with its answer.
  var acknowledged: Zip2Sequence<[PublishRequest], [PublishResponse]> { zip(sent, acknowledgements) }

  /// The publish sent last, if the broker died before answering it: it may or may not have
  /// been committed.
  var unanswered: PublishRequest? { sent.count > acknowledgements.count ? sent.last : nil }
}
