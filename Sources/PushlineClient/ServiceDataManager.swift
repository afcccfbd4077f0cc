import PushlineRPC
import PushlineSchema

/// One upstream service's cards (earnings, incentives, …) — self-contained, as the
/// earnings-tracker design asks: on first load it pulls its topic's snapshot, then it follows
/// the topic's pushes, resuming from the cached position after every reconnect.
public struct ServiceDataManager: Sendable {
  /// The service, for people: "earnings".
  public var name: String
  /// The topic its cards come on, for example `driver/42/earnings`.
  public var topic: String

  /// A manager for `name`'s cards on `topic`.
  public init(name: String, topic: String) {
    self.name = name
    self.topic = topic
  }

  /// Pulls (when the cache has nothing of the topic) and then streams into `tracker` until
  /// the session ends; throws the stream's error. A snapshot too large to pull in one message
  /// (RESOURCE_EXHAUSTED) comes by the stream instead, in parts (PROTOCOL.md 3.3 and 3.5).
  ///
  /// Calls `subscribed` once, when the stream's first update has been applied: the broker
  /// starts every subscription with one (a catch-up, a snapshot, or a confirmation of the
  /// position), so from then on it serves the topic. A pull answered does not count: the
  /// subscription may still be refused (the subject at its subscription limit, say).
  ///
  /// - Throws: INTERNAL for an update of another topic than this service's, or one whose
  ///   change names another card than it brings — a broker that breaks the protocol, whose
  ///   answer is not applied (nor counted as the subscription's).
  public func run(in session: any TrackerSession, tracker: TrackerDataManager, subscribed: @Sendable () -> Void) async throws {
    if tracker.cache.topic(topic)?.position == nil {
      do {
        tracker.apply([try checked(await session.cards(in: topic))])
      } catch let error as RPCError where error.code == .resourceExhausted {
        // The subscription below, from no position, starts with the snapshot.
      }
    }
    var isAnswered = false
    for try await update in session.updates(from: tracker.cache.positions(for: [topic])) {
      tracker.apply([try checked(update)])
      if !isAnswered {
        isAnswered = true
        subscribed()
      }
    }
  }

  /// `update`, when it is of this service's topic and each card it brings is the one its
  /// change names (the cache keys cards by the change's ID, and stores them by the card's).
  private func checked(_ update: TopicUpdate) throws -> TopicUpdate {
    guard update.topic == topic else {
      throw RPCError(code: .internal, message: "the broker sent an update of \(update.topic) for \(topic)")
    }
    for change in update.changes {
      if let card = change.card, card.cardID != change.cardID {
        throw RPCError(code: .internal, message: "the broker sent card \(card.cardID) as \(change.cardID) in \(topic)")
      }
    }
    return update
  }
}
