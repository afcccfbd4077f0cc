import NIOCore
import PushlineBroker
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import PushlineWire
import Testing

@testable import PushlineCLI

@Suite("pushline publish")
struct PublishCommandTests {
  static func changes(_ count: Int) -> [CardChange] {
    (0..<count).map { CardChange(upserting: CardInputTests.card("card/\($0)")) }
  }

  @Test func batchesHoldAtMostTheLimitInOrderAndNumberTheKey() {
    let changes = Self.changes(7)
    let batches = PublishRequest.batches(of: changes, to: "driver/1", idempotencyKey: "k", maxChanges: 3, maxBytes: 1 << 20)
    #expect(batches.map(\.changes) == [Array(changes[0..<3]), Array(changes[3..<6]), [changes[6]]])
    #expect(batches.map(\.idempotencyKey) == ["k", "k#2", "k#3"])
    #expect(batches.allSatisfy { $0.topic == "driver/1" })
    let one = PublishRequest.batches(of: changes, to: "driver/1", idempotencyKey: "k", maxChanges: 10, maxBytes: 1 << 20)
    #expect(one.map(\.idempotencyKey) == ["k"])
    #expect(PublishRequest.batches(of: [], to: "driver/1", idempotencyKey: nil, maxChanges: 3, maxBytes: 1 << 20).isEmpty)
  }

  /// Large cards split by size before their number: every request fits the message limit.
  @Test func batchesFitTheMessageSizeLimit() {
    let changes = (0..<10).map { index in
      var card = CardInputTests.card("big/\(index)")
      card.payload = TrackerCardPayload()
      card.payload?.trackerDailyEarningsCard = TrackerDailyEarningsCard(title: String(repeating: "x", count: 1000))
      return CardChange(upserting: card)
    }
    let maxBytes = 3_500
    let batches = PublishRequest.batches(of: changes, to: "driver/1", idempotencyKey: nil, maxChanges: 100, maxBytes: maxBytes)
    #expect(batches.count == 4)
    #expect(batches.flatMap(\.changes) == changes)
    #expect(batches.allSatisfy { $0.encodedSize() <= maxBytes })
    // Each batch is as full as the limit allows: one more change would not fit.
    #expect(batches.dropLast().allSatisfy { $0.encodedSize() + 1 + WireSize.lengthDelimited(changes[0]) > maxBytes })
  }

  @Test func aRemovalOfACardAlreadyInThePublishIsRefused() throws {
    let cards = [CardInputTests.card("a")]
    #expect(try PublishCommand.changes(upserting: cards, removing: ["b"]).map(\.cardID) == ["a", "b"])
    #expect(throws: CommandFailure.self) { try PublishCommand.changes(upserting: cards, removing: ["a"]) }
    #expect(throws: CommandFailure.self) { try PublishCommand.changes(upserting: [], removing: ["b", "b"]) }
  }

  /// More cards than one publish may carry go as two publishes, each acknowledged with its
  /// offsets, and all of them reach the topic; run again with the same key, both are replays.
  @Test func moreThanOnePublishCarriesGoesInBatchesToARealBroker() async throws {
    let total = BrokerConfiguration.defaultMaxChangesPerPublish + 2
    let text = (0..<total).map { CardInputTests.line("card/\($0)") }.joined(separator: "\n")
    let changes = try PublishCommand.changes(upserting: CardInput.cards(in: text), removing: ["gone"])
    let requests = PublishRequest.batches(
      of: changes, to: "driver/7", idempotencyKey: "run-1",
      maxChanges: BrokerConfiguration.defaultMaxChangesPerPublish, maxBytes: BrokerService.connectionLimits.maxMessageSize)
    #expect(requests.map(\.changes.count) == [BrokerConfiguration.defaultMaxChangesPerPublish, 3])

    let brokerHost = BrokerHost(
      storage: InMemoryBrokerStorage(), configuration: BrokerConfiguration(),
      secret: Array("0123456789abcdef0123456789abcdef".utf8), host: "127.0.0.1", port: 0)
    try await brokerHost.run { running in
      var configuration = ClientConnectionStateMachine.Configuration()
      configuration.authToken = try await running.authority.mint(
        subject: "test", role: .admin, topics: ["driver/7"], expiresAtMillis: WallClock.systemMillis() + 3_600_000)
      let server = try #require(ServerAddress("127.0.0.1:\(running.address.port!)"))
      var lines: [String] = []
      let responses = try await PublishCommand.publish(requests, to: server, configuration: configuration) { lines.append($0) }
      let epoch = try #require(responses.first?.epoch)
      #expect(responses.map { [$0.firstOffset, $0.lastOffset] } == [[1, 10_000], [10_001, 10_003]])
      #expect(responses.allSatisfy { $0.epoch == epoch && $0.replayed != true })
      #expect(lines == [
        "published 10000 change(s) to driver/7 (batch 1 of 2): epoch \(epoch), offsets 1…10000",
        "published 3 change(s) to driver/7 (batch 2 of 2): epoch \(epoch), offsets 10001…10003",
      ])

      let update = try await RPCClient.withConnection(host: server.host, port: server.port, configuration: configuration) {
        try await $0.unary(BrokerService.getCardsMethod, request: GetCardsRequest(topic: "driver/7"), response: TopicUpdate.self)
      }
      let cards = Dictionary(uniqueKeysWithValues: update.changes.compactMap { change in change.card.map { (change.cardID, $0) } })
      #expect(cards.count == total)
      #expect(cards["card/0"] == CardInputTests.card("card/0") && cards["card/\(total - 1)"] == CardInputTests.card("card/\(total - 1)"))
      #expect(update.throughOffset == 10_003)

      let again = try await PublishCommand.publish(requests, to: server, configuration: configuration) { _ in }
      #expect(again.map { [$0.firstOffset, $0.lastOffset] } == [[1, 10_000], [10_001, 10_003]])
      #expect(again.allSatisfy { $0.replayed == true })
    }
  }
}
