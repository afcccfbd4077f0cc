import PushlineBroker
import PushlineClient
import PushlineSchema
import PushlineTesting
import Testing

/// The client's side of a snapshot too large for one message, against a broker in this
/// process (its updates converted as the in-process connector hands them to apps).
@Suite("A snapshot in parts, broker to client")
struct SnapshotInPartsTests {
  static let publisher = Principal(subject: "svc", role: .publisher, topics: ["*"], expiresAtMillis: .max)
  static let reader = Principal(subject: "driver", role: .subscriber, topics: ["d/*"], expiresAtMillis: .max)

  /// Cards c1…c`count` of 60 KB each: more than a message holds, so their snapshot goes in parts.
  static func largeCards(_ count: Int) -> [TrackerCard] {
    (1...count).map { index in
      var card = card("c\(index)", priority: Double(index), amount: String(repeating: "$", count: 60_000))
      card.lastUpdatedAt = 2_000_000_000
      return card
    }
  }

  /// A copy of d/t from another epoch, holding older versions of c1…c`count` and the cards `gone`.
  static func heldCopy(of count: Int, gone: [String]) -> TopicCache {
    let held = (1...count).map { card("c\($0)", priority: 0) } + gone.map { card($0, priority: 0) }
    return TopicCache(
      topic: "d/t", epoch: -1, position: 3, verifiedAtMillis: 5,
      cards: Dictionary(uniqueKeysWithValues: held.map { ($0.cardID, CachedCard(topic: "d/t", card: $0, offset: 1, receivedAtMillis: 0)) }))
  }

  /// A client holding a topic's cards that must take a fresh snapshot of it (its epoch is
  /// another) never goes without a card the topic still has while the parts arrive, and ends
  /// with exactly the topic's cards: those the topic no longer has go once the rest has come.
  @Test func aClientHoldingCardsNeverLosesOneTheTopicStillHas() async throws {
    let broker = try await Broker(storage: InMemoryBrokerStorage())
    let published = Self.largeCards(80)
    for batch in stride(from: 0, to: published.count, by: 10) {
      _ = try await broker.publish(
        PublishRequest(topic: "d/t", changes: published[batch..<batch + 10].map { CardChange(upserting: $0) }), for: Self.publisher)
    }
    var topic = Self.heldCopy(of: 80, gone: ["gone-1", "gone-2"])

    var updates: [TopicUpdate] = []
    var removed: [String] = []
    try await InProcessTrackerConnector(broker: broker, principal: Self.reader).withSession { session in
      for try await update in session.updates(from: [topic.resumePosition]) {
        updates.append(update)
        removed += topic.apply(update, receivedAtMillis: 0).removed
        #expect(published.allSatisfy { topic.cards[$0.cardID] != nil }, "a card went missing after update \(updates.count)")
        if topic.position == 80 { break }
      }
    }
    #expect(updates.count > 1 && updates[0].isSnapshot && updates[0].snapshotThroughOffset == 80)
    #expect(topic.cards.mapValues(\.card) == Dictionary(uniqueKeysWithValues: published.map { ($0.cardID, $0) }))
    #expect(removed == ["gone-1", "gone-2"] && topic.awaitingSnapshot.isEmpty && topic.snapshotThroughOffset == nil)
    #expect(topic.verifiedAtMillis ?? 0 > 5)
  }

  /// A client that drops after a snapshot's first part and resumes from its position gets the
  /// rest as a catch-up, each card at its latest version — so a card changed meanwhile comes
  /// above the snapshot's end. Reaching that end in the middle of the catch-up (here one change
  /// per update) must not drop the card: it is still to come, and the copy is exact only once
  /// nothing of the topic is left to send.
  @Test func aCardChangedWhileTheClientWasAwayDoesNotVanishWhenItResumes() async throws {
    let broker = try await Broker(storage: InMemoryBrokerStorage(), configuration: BrokerConfiguration(maxChangesPerUpdate: 1))
    var published = Self.largeCards(40)
    _ = try await broker.publish(PublishRequest(topic: "d/t", changes: published.map { CardChange(upserting: $0) }), for: Self.publisher)
    var topic = Self.heldCopy(of: 40, gone: ["gone"])
    var removed: [String] = []
    try await InProcessTrackerConnector(broker: broker, principal: Self.reader).withSession { session in
      for try await update in session.updates(from: [topic.resumePosition]) {
        removed += topic.apply(update, receivedAtMillis: 0).removed
        break  // the connection drops after the first part
      }
    }
    try #require(topic.snapshotThroughOffset == 40 && (topic.position ?? 0) < 30)
    published[34].priority = 100  // c35 changes at offset 41, while the client is away
    _ = try await broker.publish(PublishRequest(topic: "d/t", changes: [CardChange(upserting: published[34])]), for: Self.publisher)
    try await InProcessTrackerConnector(broker: broker, principal: Self.reader).withSession { session in
      for try await update in session.updates(from: [topic.resumePosition]) {
        removed += topic.apply(update, receivedAtMillis: 0).removed
        #expect(published.allSatisfy { topic.cards[$0.cardID] != nil }, "a card went missing at position \(topic.position ?? -1)")
        if topic.position == 41 { break }
      }
    }
    #expect(topic.cards.mapValues(\.card) == Dictionary(uniqueKeysWithValues: published.map { ($0.cardID, $0) }))
    #expect(removed == ["gone"] && topic.awaitingSnapshot.isEmpty && topic.snapshotThroughOffset == nil)
  }

  /// Without a drop, the parts are the snapshot as it was taken: its last part makes the copy
  /// exact at the snapshot's offset, so the cards it no longer has go there — even while
  /// changes published meanwhile still queue behind it, a piece at a time — and none the
  /// topic has goes missing, a card changed meanwhile included.
  @Test func theLastPartEndsTheSnapshotWhileLaterChangesStillQueue() async throws {
    let broker = try await Broker(storage: InMemoryBrokerStorage(), configuration: BrokerConfiguration(maxChangesPerUpdate: 1))
    var published = Self.largeCards(40)
    _ = try await broker.publish(PublishRequest(topic: "d/t", changes: published.map { CardChange(upserting: $0) }), for: Self.publisher)
    var topic = Self.heldCopy(of: 40, gone: ["gone"])
    var removedAt: [String: Int64] = [:]
    try await InProcessTrackerConnector(broker: broker, principal: Self.reader).withSession { session in
      for try await update in session.updates(from: [topic.resumePosition]) {
        for cardID in topic.apply(update, receivedAtMillis: 0).removed { removedAt[cardID] = topic.position }
        #expect(published.allSatisfy { topic.cards[$0.cardID] != nil }, "a card went missing at position \(topic.position ?? -1)")
        if update.snapshotThroughOffset != nil {  // the first part: three changes queue behind the rest
          for index in [34, 36, 38] { published[index].priority = 100 }
          for index in [34, 36, 38] {
            _ = try await broker.publish(PublishRequest(topic: "d/t", changes: [CardChange(upserting: published[index])]), for: Self.publisher)
          }
        }
        if topic.position == 43 { break }
      }
    }
    #expect(removedAt == ["gone": 40])
    #expect(topic.cards.mapValues(\.card) == Dictionary(uniqueKeysWithValues: published.map { ($0.cardID, $0) }))
  }
  /// A client that resumes in the middle of the parts, while changes keep queueing behind its
  /// catch-up a piece at a time, still finishes the snapshot: the catch-up's last part leaves
  /// it exactly at the top it was made at, complete, whatever queued after.
  @Test func aResumedClientFinishesTheSnapshotAtItsCatchUpsEndDespiteABacklog() async throws {
    let broker = try await Broker(storage: InMemoryBrokerStorage(), configuration: BrokerConfiguration(maxChangesPerUpdate: 1))
    var published = Self.largeCards(40)
    _ = try await broker.publish(PublishRequest(topic: "d/t", changes: published.map { CardChange(upserting: $0) }), for: Self.publisher)
    var topic = Self.heldCopy(of: 40, gone: ["gone"])
    try await InProcessTrackerConnector(broker: broker, principal: Self.reader).withSession { session in
      for try await update in session.updates(from: [topic.resumePosition]) {
        _ = topic.apply(update, receivedAtMillis: 0)
        break  // the connection drops after the first part
      }
    }
    // Taken one change at a time, straight from the subscription, so that the changes
    // published after its first piece queue behind the rest of the catch-up.
    let subscription = try broker.subscribe(SubscribeRequest(topics: [topic.resumePosition]), for: Self.reader)
    var removedAt: [String: Int64] = [:]
    var first = true
    while topic.position != 43 {
      for update in try await broker.nextUpdates(for: subscription).map(TopicUpdate.init(decoding:)) {
        for cardID in topic.apply(update, receivedAtMillis: 0).removed { removedAt[cardID] = topic.position }
        #expect(published.allSatisfy { topic.cards[$0.cardID] != nil }, "a card went missing at position \(topic.position ?? -1)")
      }
      guard first else { continue }
      first = false
      for index in [2, 4, 6] {
        published[index].priority = 100
        _ = try await broker.publish(PublishRequest(topic: "d/t", changes: [CardChange(upserting: published[index])]), for: Self.publisher)
      }
    }
    broker.unsubscribe(subscription)
    #expect(removedAt == ["gone": 40])
    #expect(topic.cards.mapValues(\.card) == Dictionary(uniqueKeysWithValues: published.map { ($0.cardID, $0) }))
  }
}
