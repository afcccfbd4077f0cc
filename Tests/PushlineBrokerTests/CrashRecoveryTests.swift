import Foundation
import PushlineBroker
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import Testing

/// A broker process killed with SIGKILL under publish load (``CrashLoad``: upserts and
/// removals, every publish with an idempotency key), then restarted on the same data
/// directory: every acknowledged change is there, removals included, and besides them only
/// the publishes the kill left unanswered, each whole or not at all; offsets continue without
/// reuse; a publish sent again with its key — acknowledged or unanswered — gets its first
/// offsets back (`replayed`) if it was committed, and is applied once; and subscribers that
/// resume, from where the kill left one and from before a removal, end with exactly the
/// publishers' final state.
@Suite("Crash recovery of a real broker process")
struct CrashRecoveryTests {
  static let secret = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
  /// How many publishes the broker acknowledges before it is killed.
  static let publishesBeforeKill = 400

  func connect<Result: Sendable>(_ port: Int, _ token: String, _ body: (RPCConnection) async throws -> Result) async throws -> Result {
    var configuration = ClientConnectionStateMachine.Configuration()
    configuration.authToken = token
    return try await RPCClient.withConnection(host: "127.0.0.1", port: port, configuration: configuration, body)
  }

  /// The live cards of a snapshot, by cardID.
  static func cards(of snapshot: TopicUpdate) -> [String: TrackerCard] {
    Dictionary(uniqueKeysWithValues: snapshot.changes.compactMap { change in change.card.map { (change.cardID, $0) } })
  }

  /// A broker killed, its write-ahead log then deleted (someone clearing "temporary" files):
  /// restarted, it gives the topic a new epoch, so a client positioned in the old one gets a
  /// snapshot rather than offsets given out again. A broker stopped cleanly leaves an empty
  /// log, whose deletion changes nothing.
  @Test func aKilledBrokersLostLogStartsANewEpoch() async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-lostlog-\(UInt32.random(in: 0...UInt32.max))").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let log = directory + "/broker.sqlite-wal"
    let authority = try await TokenAuthority(secret: Array(Self.secret.utf8), nowMillis: WallClock.systemMillis)
    let token = try await authority.mint(subject: "p", role: .publisher, topics: ["driver/*"], expiresAtMillis: WallClock.systemMillis() + 3_600_000)
    func publish(_ cardID: String, to broker: BrokerProcess) async throws -> PublishResponse {
      try await connect(broker.port, token) { connection in
        try await connection.unary(
          BrokerService.publishMethod, request: PublishRequest(topic: "driver/1", changes: [CardChange(upserting: card(cardID, 1))]),
          response: PublishResponse.self)
      }
    }
    let first = try await BrokerProcess(dataDirectory: directory, secret: Self.secret)
    let seen = try await publish("a", to: first)
    await first.kill()
    try FileManager.default.removeItem(atPath: log)
    let second = try await BrokerProcess(dataDirectory: directory, secret: Self.secret)
    let renewed = try await publish("b", to: second)
    #expect(renewed.epoch != seen.epoch)
    await second.stop()
    try FileManager.default.removeItem(atPath: log)
    let third = try await BrokerProcess(dataDirectory: directory, secret: Self.secret)
    let kept = try await publish("c", to: third)
    #expect(kept.epoch == renewed.epoch && kept.firstOffset == renewed.lastOffset + 1)
    await third.stop()
  }

  @Test func everyAcknowledgedChangeSurvivesSIGKILL() async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-crash-\(UInt32.random(in: 0...UInt32.max))").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let authority = try await TokenAuthority(secret: Array(Self.secret.utf8), nowMillis: WallClock.systemMillis)
    let expiry = WallClock.systemMillis() + 3_600_000
    let publisherToken = try await authority.mint(subject: "load", role: .publisher, topics: ["driver/*"], expiresAtMillis: expiry)
    let readerToken = try await authority.mint(subject: "reader", role: .subscriber, topics: ["driver/*"], expiresAtMillis: expiry)

    let first = try await BrokerProcess(dataDirectory: directory, secret: Self.secret)
    // A subscriber follows driver/0 while the load runs; it keeps each state its copy passes through.
    let subscriber = Task { [port = first.port] () -> [TopicReplica] in
      var replica = TopicReplica()
      var states: [TopicReplica] = []
      _ = try? await connect(port, readerToken) { connection in
        for try await update in connection.serverStreaming(
          BrokerService.subscribeMethod, request: SubscribeRequest(topics: [TopicPosition(topic: "driver/0")]),
          response: TopicUpdate.self)
        {
          replica.apply(update)
          states.append(replica)
        }
      }
      return states
    }
    // Eight publishers publish the load, one publish at a time each, until the broker dies.
    let (acknowledgements, acknowledge) = AsyncStream<Void>.makeStream()
    let logs = await withTaskGroup(of: PublisherLog.self) { group in
      for publisher in 0..<8 {
        group.addTask { [port = first.port] in
          var log = PublisherLog()
          _ = try? await connect(port, publisherToken) { connection in
            for number in 0... {
              log.sent.append(CrashLoad.publish(number, by: publisher))
              log.acknowledgements.append(
                try await connection.unary(BrokerService.publishMethod, request: log.sent[number], response: PublishResponse.self))
              acknowledge.yield()
            }
          }
          return log
        }
      }
      for await _ in acknowledgements.prefix(Self.publishesBeforeKill) {}
      await first.kill()
      return await group.reduce(into: []) { $0.append($1) }
    }
    let states = await subscriber.value
    let killed = try #require(states.last)  // where the subscriber was when the broker died
    #expect(killed.violations.isEmpty)

    let second = try await BrokerProcess(dataDirectory: directory, secret: Self.secret)
    let acknowledged = logs.flatMap(\.acknowledged)
    let unanswered = logs.compactMap(\.unanswered)
    let after = TrackerCard(cardID: "after", priority: 1, isValid: true)
    try await connect(second.port, publisherToken) { publisher in
      try await connect(second.port, readerToken) { reader in
        func snapshot(_ topic: String) async throws -> TopicUpdate {
          try await reader.unary(BrokerService.getCardsMethod, request: GetCardsRequest(topic: topic), response: TopicUpdate.self)
        }
        func publish(_ request: PublishRequest) async throws -> PublishResponse {
          try await publisher.unary(BrokerService.publishMethod, request: request, response: PublishResponse.self)
        }
        // Every acknowledged change is there, removals included; of the unanswered publishes,
        // each is there whole or not at all.
        var restarted: [String: TopicUpdate] = [:]
        var committed: Set<PublishRequest> = []
        let acknowledgedCards = CrashLoad.cards(after: acknowledged.map(\.0))
        for topic in CrashLoad.topics {
          let snapshot = try await snapshot(topic)
          let answers = acknowledged.filter { $0.0.topic == topic }.map(\.1)
          #expect(answers.allSatisfy { $0.epoch == snapshot.epoch })
          #expect(snapshot.throughOffset >= answers.map(\.lastOffset).max() ?? 0)
          let stored = Self.cards(of: snapshot)
          var expected = acknowledgedCards[topic] ?? [:]
          for request in unanswered where request.topic == topic && request.changes.allSatisfy({ stored[$0.cardID] == $0.card }) {
            committed.insert(request)
            for change in request.changes { expected[change.cardID] = change.card }
          }
          #expect(stored == expected, "\(topic)")
          restarted[topic] = snapshot
        }

        // Offsets continue without reuse.
        var tops: [String: Int64] = [:]
        for (topic, snapshot) in restarted {
          let next = try await publish(PublishRequest(topic: topic, changes: [CardChange(upserting: after)]))
          #expect(next.epoch == snapshot.epoch && next.firstOffset == snapshot.throughOffset + 1)
          tops[topic] = next.lastOffset
        }

        // The unanswered publishes, sent again with their keys: a committed one gets the
        // offsets it took, the others are applied now.
        for request in unanswered {
          let response = try await publish(request)
          if committed.contains(request) {
            let firstCard = restarted[request.topic]?.changes.first { $0.cardID == request.changes[0].cardID }
            #expect(response.replayed == true && response.firstOffset == firstCard?.offset)
            #expect(response.lastOffset == response.firstOffset + Int64(request.changes.count) - 1)
          } else {
            #expect(response.replayed != true && response.firstOffset == (tops[request.topic] ?? 0) + 1)
            tops[request.topic] = response.lastOffset
          }
        }

        // Every acknowledged publish, sent again with its key, gets the answer it got before
        // the kill, marked as a replay.
        var answeredAnew: [String] = []
        for (request, acknowledgement) in acknowledged {
          var replay = acknowledgement
          replay.replayed = true
          if try await publish(request) != replay { answeredAnew.append(request.idempotencyKey ?? "") }
        }
        #expect(answeredAnew.isEmpty, "\(answeredAnew.count) answered anew after the restart, first \(answeredAnew.prefix(4))")

        // The publishers' final state, exactly, and nothing sent again was applied twice.
        let publishersCards = CrashLoad.cards(after: logs.flatMap(\.sent))
        var final: [String: TopicUpdate] = [:]
        for topic in CrashLoad.topics {
          final[topic] = try await snapshot(topic)
          #expect(final[topic].map(Self.cards) == (publishersCards[topic] ?? [:]).merging(["after": after]) { $1 }, "\(topic)")
          #expect(final[topic]?.throughOffset == tops[topic])
        }

        // Subscribers resume: from where the kill left one, and from before the removal of a
        // card the final state lacks, which only the removal's tombstone can bring.
        let driver0 = try #require(final["driver/0"])
        let finalCards = Self.cards(of: driver0)
        let beforeARemoval = try #require(states.first { $0.cards.keys.contains { finalCards[$0] == nil } })
        for var replica in [killed, beforeARemoval] {
          for try await update in reader.serverStreaming(
            BrokerService.subscribeMethod,
            request: SubscribeRequest(topics: [TopicPosition(topic: "driver/0", epoch: replica.epoch, offset: replica.position)]),
            response: TopicUpdate.self)
          {
            #expect(!update.isSnapshot)
            replica.apply(update)
            if replica.position == driver0.throughOffset { break }
          }
          #expect(replica.violations.isEmpty)
          #expect(replica.cards == finalCards)
        }
      }
    }
    await second.stop()
  }
}
