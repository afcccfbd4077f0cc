@testable import PushlineBroker
import PushlineRPC
import PushlineSchema
import PushlineTesting
import PushlineWire
import Synchronization
import Testing

/// A client's copy of one topic, applying updates the way the delivery contract allows and
/// recording every breach of it.
struct TopicReplica {
  var epoch: Int64?
  var position: Int64?
  var cards: [String: TrackerCard] = [:]
  var violations: [String] = []

  mutating func apply(_ update: TopicUpdate) {
    if update.isSnapshot {
      epoch = update.epoch
      cards = Dictionary(uniqueKeysWithValues: update.changes.compactMap { change in change.card.map { (change.cardID, $0) } })
      position = update.throughOffset
      return
    }
    if update.epoch != epoch { violations.append("update of epoch \(update.epoch) without a snapshot (have \(String(describing: epoch)))") }
    var last = position ?? 0
    for change in update.changes {
      let offset = change.offset ?? -1
      if offset <= last { violations.append("offset \(offset) not above \(last)") }
      last = offset
      cards[change.cardID] = change.card
    }
    if update.throughOffset < last { violations.append("throughOffset \(update.throughOffset) below last change \(last)") }
    if let position, update.throughOffset < position { violations.append("position went back from \(position) to \(update.throughOffset)") }
    position = update.throughOffset
  }

  /// Applies an update as the broker sends it, its cards still encoded.
  mutating func apply(_ update: EncodedTopicUpdate) {
    do {
      apply(try TopicUpdate(decoding: update))
    } catch {
      violations.append("an update whose cards do not decode: \(error)")
    }
  }

  var resumePoint: TopicPosition { TopicPosition(topic: "", epoch: epoch, offset: position) }
}

extension Subscription {
  /// ``takeReady(maxChanges:nowMillis:)``'s updates as a client reads them off the wire: so
  /// that every test reading a subscription also checks how its shared runs are sent.
  func takeReadyFromTheWire(maxChanges: Int, nowMillis: Int64) throws -> [EncodedTopicUpdate]? {
    try takeReady(maxChanges: maxChanges, nowMillis: nowMillis)?.map(readOffTheWire)
  }
}

/// `update` as a client reads it off the wire, checked to encode exactly as the same update
/// with its changes in one array does.
func readOffTheWire(_ update: AssembledTopicUpdate) throws -> EncodedTopicUpdate {
  let bytes = update.serializedBytes()
  #expect(bytes == update.topicUpdate.serializedBytes() && bytes.count == update.encodedSize())
  return try EncodedTopicUpdate(serializedBytes: bytes)
}

/// A random publish's changes, applied to `truth`: one to three distinct cards among
/// `cardCount` (`c0`…), each removed one time in four and otherwise upserted at the next
/// `version` — a card of 60 KB when `large`.
func randomChanges(
  _ random: inout SplitMix64, cardCount: UInt64, large: Bool, version: inout Int, truth: inout [String: TrackerCard]
) -> (upserts: [TrackerCard], removals: [String]) {
  var changes: (upserts: [TrackerCard], removals: [String]) = ([], [])
  var ids = Set<String>()
  for _ in 0..<(1 + random.next() % 3) {
    let id = "c\(random.next() % cardCount)"
    guard ids.insert(id).inserted else { continue }
    version += 1
    if random.next() % 4 == 0 {
      changes.removals.append(id)
      truth[id] = nil
    } else {
      var upsert = large ? titled(id, bytes: 60_000) : card(id, version)
      upsert.lastUpdatedAt = Int64(version)
      changes.upserts.append(upsert)
      truth[id] = upsert
    }
  }
  return changes
}

func card(_ id: String, _ version: Int, expiresAt: Int64? = nil) -> TrackerCard {
  var card = TrackerCard(cardID: id, priority: Double(version), isValid: true)
  card.lastUpdatedAt = Int64(version)
  card.expiresAt = expiresAt
  return card
}

/// A card whose daily-earnings title makes it at least `bytes` long, encoded.
func titled(_ id: String, bytes: Int) -> TrackerCard {
  var card = card(id, 1)
  var daily = TrackerDailyEarningsCard()
  daily.title = String(repeating: "t", count: bytes)
  var payload = TrackerCardPayload()
  payload.trackerDailyEarningsCard = daily
  card.payload = payload
  return card
}

func principal(_ role: Role, _ topics: [String] = ["*"], expiresAtMillis: Int64 = .max) -> Principal {
  Principal(subject: "test", role: role, topics: topics, expiresAtMillis: expiresAtMillis)
}

let publisher = principal(.publisher)
let reader = principal(.subscriber)

extension Broker {
  /// Publishes upserts of `upserts` and removals of `removals` to `topic` as the test publisher.
  @discardableResult
  func publish(_ topic: String, _ upserts: [TrackerCard], removing removals: [String] = [], key: String? = nil) async throws
    -> PublishResponse
  {
    try await publish(
      PublishRequest(
        topic: topic, changes: upserts.map { CardChange(upserting: $0) } + removals.map { CardChange(removing: $0) },
        idempotencyKey: key),
      for: publisher)
  }

  /// Publishes as ``publish(_:_:removing:key:)`` does, but hands the request to the broker
  /// before returning: when this returns, the broker has answered it (a refusal, a replay) or
  /// holds it (joined to its original, or waiting for a commit), so that a test orders
  /// publishes without waiting for tasks to reach the broker.
  func enqueuePublish(_ topic: String, _ upserts: [TrackerCard], removing removals: [String] = [], key: String? = nil)
    -> PublishAnswer
  {
    let answer = PublishAnswer()
    let request = PublishRequest(
      topic: topic, changes: upserts.map { CardChange(upserting: $0) } + removals.map { CardChange(removing: $0) },
      idempotencyKey: key)
    publish(EncodedPublishRequest(encoding: request), for: publisher, completion: Answered(answer.complete))
    return answer
  }

  /// Subscribes the test reader to `topic` from `position`.
  func subscribe(_ topic: String, epoch: Int64? = nil, offset: Int64? = nil) throws -> Subscription {
    try subscribe(SubscribeRequest(topics: [TopicPosition(topic: topic, epoch: epoch, offset: offset)]), for: reader)
  }
}

/// Expects `body` to throw an ``RPCError`` with `code`.
func expectStatus<T>(
  _ code: StatusCode, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> T
) async {
  do {
    _ = try await body()
    Issue.record("expected \(code), but the call succeeded", sourceLocation: sourceLocation)
  } catch let error as RPCError {
    #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
  } catch {
    Issue.record("expected \(code), got \(error)", sourceLocation: sourceLocation)
  }
}
