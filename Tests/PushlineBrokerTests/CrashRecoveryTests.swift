import Foundation
import PushlineBroker
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import Synchronization
import Testing

/// A broker process killed with SIGKILL under publish load, then restarted on the same data
/// directory: every acknowledged update is there, offsets continue without reuse, and a
/// subscriber that resumes ends with exactly the publishers' final state.
@Suite("Crash recovery of a real broker process")
struct CrashRecoveryTests {
  static let secret = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
  static let topics = (0..<4).map { "driver/\($0)" }

  struct Acknowledged {
    /// Per topic: the highest acknowledged offset, and per card the highest acknowledged version.
    var topOffset: [String: Int64] = [:]
    var versions: [String: [String: Int]] = [:]
    var epoch: [String: Int64] = [:]
  }

  /// What the publishers have seen acknowledged, shared between them.
  final class AcknowledgedLog: Sendable {
    let state = Mutex(Acknowledged())
  }

  func connect<Result: Sendable>(_ port: Int, _ token: String, _ body: (RPCConnection) async throws -> Result) async throws -> Result {
    var configuration = ClientConnectionStateMachine.Configuration()
    configuration.authToken = token
    return try await RPCClient.withConnection(host: "127.0.0.1", port: port, configuration: configuration, body)
  }

  @Test func everyAcknowledgedUpdateSurvivesSIGKILL() async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-crash-\(UInt32.random(in: 0...UInt32.max))").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let authority = try await TokenAuthority(secret: Array(Self.secret.utf8), nowMillis: WallClock.systemMillis)
    let expiry = WallClock.systemMillis() + 3_600_000
    let publisherToken = try await authority.mint(subject: "load", role: .publisher, topics: ["driver/*"], expiresAtMillis: expiry)
    let readerToken = try await authority.mint(subject: "reader", role: .subscriber, topics: ["driver/*"], expiresAtMillis: expiry)

    let first = try await BrokerProcess(dataDirectory: directory, secret: Self.secret)
    let acknowledged = AcknowledgedLog()
    let (enoughAcknowledged, enough) = AsyncStream<Void>.makeStream()
    var replica = TopicReplica()
    // A subscriber follows driver/0 while the load runs; it keeps what it applied.
    let subscriber = Task { [port = first.port] () -> TopicReplica in
      var replica = TopicReplica()
      _ = try? await connect(port, readerToken) { connection in
        for try await update in connection.serverStreaming(
          BrokerService.subscribeMethod, request: SubscribeRequest(topics: [TopicPosition(topic: "driver/0")]),
          response: TopicUpdate.self)
        {
          replica.apply(update)
        }
      }
      return replica
    }
    // Eight publishers, each a card of its own per topic, bump versions until the broker dies.
    try await withThrowingTaskGroup(of: Void.self) { group in
      for worker in 0..<8 {
        group.addTask { [port = first.port] in
          _ = try? await connect(port, publisherToken) { connection in
            for version in 1... {
              let topic = Self.topics[version % Self.topics.count]
              let cardID = "w\(worker)"
              var card = TrackerCard(cardID: cardID, priority: Double(version), isValid: true)
              card.lastUpdatedAt = Int64(version)
              let response = try await connection.unary(
                BrokerService.publishMethod, request: PublishRequest(topic: topic, changes: [CardChange(upserting: card)]),
                response: PublishResponse.self)
              let total = acknowledged.state.withLock { state in
                state.topOffset[topic] = max(state.topOffset[topic] ?? 0, response.lastOffset)
                state.versions[topic, default: [:]][cardID] = max(state.versions[topic]?[cardID] ?? 0, version)
                state.epoch[topic] = response.epoch
                return state.topOffset.values.reduce(0, +)
              }
              if total >= 400 { enough.yield() }
            }
          }
        }
      }
      var signal = enoughAcknowledged.makeAsyncIterator()
      await signal.next()
      await first.kill()
      try await group.waitForAll()
    }
    replica = await subscriber.value
    #expect(replica.violations.isEmpty)

    let second = try await BrokerProcess(dataDirectory: directory, secret: Self.secret)
    let expected = acknowledged.state.withLock { $0 }
    try await connect(second.port, publisherToken) { publisher in
      try await connect(second.port, readerToken) { reader in
        for topic in Self.topics {
          let snapshot = try await reader.unary(
            BrokerService.getCardsMethod, request: GetCardsRequest(topic: topic), response: TopicUpdate.self)
          #expect(snapshot.epoch == expected.epoch[topic])
          #expect(snapshot.throughOffset >= expected.topOffset[topic] ?? 0)
          let stored = Dictionary(uniqueKeysWithValues: snapshot.changes.compactMap { change in
            change.card.map { (change.cardID, Int($0.lastUpdatedAt ?? 0)) }
          })
          for (cardID, version) in expected.versions[topic] ?? [:] {
            #expect((stored[cardID] ?? 0) >= version, "\(topic) \(cardID): acknowledged version \(version) lost")
          }
          let next = try await publisher.unary(
            BrokerService.publishMethod,
            request: PublishRequest(topic: topic, changes: [CardChange(upserting: TrackerCard(cardID: "after", priority: 1, isValid: true))]),
            response: PublishResponse.self)
          #expect(next.epoch == snapshot.epoch && next.firstOffset == snapshot.throughOffset + 1)
        }
        // The subscriber resumes from where it was when the broker died.
        let final = try await reader.unary(
          BrokerService.getCardsMethod, request: GetCardsRequest(topic: "driver/0"), response: TopicUpdate.self)
        for try await update in reader.serverStreaming(
          BrokerService.subscribeMethod,
          request: SubscribeRequest(topics: [TopicPosition(topic: "driver/0", epoch: replica.epoch, offset: replica.position)]),
          response: TopicUpdate.self)
        {
          #expect(!update.isSnapshot)
          replica.apply(update)
          if replica.position == final.throughOffset { break }
        }
        #expect(replica.violations.isEmpty)
        #expect(replica.cards == Dictionary(uniqueKeysWithValues: final.changes.compactMap { c in c.card.map { (c.cardID, $0) } }))
      }
    }
    await second.stop()
  }
}
