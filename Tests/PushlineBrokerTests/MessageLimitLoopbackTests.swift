import PushlineBroker
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import Testing

/// A client may announce a message limit below the protocol's 4 MiB (2.5: the smaller of the
/// two peers' limits is in force): the broker keeps what it sends within it. The client's own
/// connection refuses any larger message, so a broker that ignored the limit would fail these
/// streams with the client's RESOURCE_EXHAUSTED rather than the broker's.
@Suite("A client's smaller message limit, over loopback TCP")
struct MessageLimitLoopbackTests {
  static let limit = 16 << 10

  /// Connects with `token`, announcing a message limit of ``limit``.
  static func connect<Result: Sendable>(
    to harness: BrokerLoopbackTests.Harness, token: String, _ body: (RPCConnection) async throws -> Result
  ) async throws -> Result {
    var configuration = ClientConnectionStateMachine.Configuration()
    configuration.authToken = token
    configuration.limits.maxMessageSize = limit
    return try await RPCClient.withConnection(host: "127.0.0.1", port: harness.port, configuration: configuration, body)
  }

  /// 100 cards of about 1 KiB, about 100 KiB in all: six times the client's limit.
  static let cards = (0..<100).map { titled("c\($0)", bytes: 1_000) }

  @Test func aSnapshotComesInPartsThatFitTheClientsLimit() async throws {
    try await BrokerLoopbackTests.withBroker { harness in
      let published = try await harness.broker.publish("driver/7", Self.cards)
      let token = try await harness.token(.subscriber, ["driver/7"])
      try await Self.connect(to: harness, token: token) { subscriber in
        var updates = BrokerLoopbackTests.updates(of: "driver/7", on: subscriber)
        var replica = TopicReplica()
        var received = 0
        while replica.position != published.lastOffset {
          replica.apply(try #require(try await updates.next()))
          received += 1
        }
        #expect(received > 6)  // in parts, each under the limit
        #expect(replica.violations.isEmpty)
        #expect(replica.cards == Dictionary(uniqueKeysWithValues: Self.cards.map { ($0.cardID, $0) }))
      }
    }
  }

  /// Cards that each fit the limit but not two together — 7 KB, then 12 KB, in turn — still
  /// reach the client: a part stops before a card that would take it past its budget, rather
  /// than after it.
  @Test func cardsThatFitOnlyAloneStillArrive() async throws {
    let mixed = (0..<10).map { titled("m\($0)", bytes: $0.isMultiple(of: 2) ? 7_000 : 12_000) }
    try await BrokerLoopbackTests.withBroker { harness in
      let published = try await harness.broker.publish("driver/7", mixed)
      let token = try await harness.token(.subscriber, ["driver/7"])
      try await Self.connect(to: harness, token: token) { subscriber in
        var updates = BrokerLoopbackTests.updates(of: "driver/7", on: subscriber)
        var replica = TopicReplica()
        while replica.position != published.lastOffset { replica.apply(try #require(try await updates.next())) }
        #expect(replica.violations.isEmpty)
        #expect(replica.cards == Dictionary(uniqueKeysWithValues: mixed.map { ($0.cardID, $0) }))
      }
    }
  }

  @Test func aGetCardsOverTheClientsLimitIsRefusedByTheBroker() async throws {
    try await BrokerLoopbackTests.withBroker { harness in
      try await harness.broker.publish("driver/7", Self.cards)
      let token = try await harness.token(.subscriber, ["driver/7"])
      try await Self.connect(to: harness, token: token) { subscriber in
        let error = await #expect(throws: RPCError.self) {
          try await subscriber.unary(BrokerService.getCardsMethod, request: GetCardsRequest(topic: "driver/7"), response: TopicUpdate.self)
        }
        #expect(error?.code == .resourceExhausted)
        #expect(error?.message.contains("over this connection's \(Self.limit)-byte message limit: subscribe to it") == true)
      }
    }
  }

  /// A card larger than the client's limit cannot reach it: the server ends the stream, saying
  /// why, rather than send what the client refuses.
  @Test func aCardLargerThanTheClientsLimitEndsTheStream() async throws {
    try await BrokerLoopbackTests.withBroker { harness in
      try await harness.broker.publish("driver/7", [titled("large", bytes: 20_000)])
      let token = try await harness.token(.subscriber, ["driver/7"])
      try await Self.connect(to: harness, token: token) { subscriber in
        var updates = BrokerLoopbackTests.updates(of: "driver/7", on: subscriber)
        let error = await #expect(throws: RPCError.self) { _ = try await updates.next() }
        #expect(error?.code == .resourceExhausted)
        #expect(error?.message.contains("over this connection's \(Self.limit)-byte message limit") == true)
      }
    }
  }
}
