import ArgumentParser
import Foundation
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

  @Test func batchesHoldAtMostTheLimitInOrderAndNumberTheKey() throws {
    let changes = Self.changes(7)
    let batches = try PublishRequest.batches(of: changes, to: "driver/1", idempotencyKey: "k", maxChanges: 3, maxBytes: 1 << 20, maxKeySize: Broker.maxKeySize)
    #expect(batches.map(\.changes) == [Array(changes[0..<3]), Array(changes[3..<6]), [changes[6]]])
    #expect(batches.map(\.idempotencyKey) == ["k", "k#2", "k#3"])
    #expect(batches.allSatisfy { $0.topic == "driver/1" })
    let one = try PublishRequest.batches(of: changes, to: "driver/1", idempotencyKey: "k", maxChanges: 10, maxBytes: 1 << 20, maxKeySize: Broker.maxKeySize)
    #expect(one.map(\.idempotencyKey) == ["k"])
    #expect(try PublishRequest.batches(of: [], to: "driver/1", idempotencyKey: nil, maxChanges: 3, maxBytes: 1 << 20, maxKeySize: Broker.maxKeySize).isEmpty)
  }

  /// Large cards split by size before their number: every request fits the message limit.
  @Test func batchesFitTheMessageSizeLimit() throws {
    let changes = (0..<10).map { index in
      var card = CardInputTests.card("big/\(index)")
      card.payload = TrackerCardPayload()
      card.payload?.trackerDailyEarningsCard = TrackerDailyEarningsCard(title: String(repeating: "x", count: 1000))
      return CardChange(upserting: card)
    }
    let maxBytes = 3_500
    let batches = try PublishRequest.batches(of: changes, to: "driver/1", idempotencyKey: nil, maxChanges: 100, maxBytes: maxBytes, maxKeySize: Broker.maxKeySize)
    #expect(batches.count == 4)
    #expect(batches.flatMap(\.changes) == changes)
    #expect(batches.allSatisfy { $0.encodedSize() <= maxBytes })
    // Each batch is as full as the limit allows: one more change would not fit.
    #expect(batches.dropLast().allSatisfy { $0.encodedSize() + 1 + WireSize.lengthDelimited(changes[0]) > maxBytes })
  }

  /// Every batch's key, K#n included, must fit the broker's limit; the suffix grows with the
  /// number of batches (#2 takes 2 bytes, #10 takes 3).
  @Test func aKeyTooLongForTheBatchesItNeedsIsRefused() throws {
    let limit = Broker.maxKeySize
    func keys(_ changes: Int, _ keySize: Int, maxChanges: Int) throws(CommandFailure) -> [String?] {
      try PublishRequest.batches(
        of: Self.changes(changes), to: "driver/1", idempotencyKey: String(repeating: "k", count: keySize),
        maxChanges: maxChanges, maxBytes: 1 << 20, maxKeySize: limit
      ).map(\.idempotencyKey)
    }
    #expect(try keys(3, limit, maxChanges: 3).map { $0?.utf8.count } == [limit])
    #expect(try keys(7, limit - 2, maxChanges: 3).map { $0?.utf8.count } == [limit - 2, limit, limit])
    #expect(try keys(10, limit - 3, maxChanges: 1).last??.utf8.count == limit)

    let oneBatch = #expect(throws: CommandFailure.self) { try keys(3, limit + 1, maxChanges: 3) }
    #expect(oneBatch?.description == "--idempotency-key of \(limit + 1) bytes is over the broker's limit of \(limit); nothing was published")
    let twoBatches = #expect(throws: CommandFailure.self) { try keys(4, limit - 1, maxChanges: 3) }
    #expect(twoBatches?.description == "--idempotency-key of \(limit - 1) bytes is too long for the 2 batches this input needs: "
      + "the longest key they need, K#2, would be \(limit + 1) bytes, over the broker's limit of \(limit); nothing was "
      + "published (use a key of at most \(limit - 2) bytes)")
    let tenBatches = #expect(throws: CommandFailure.self) { try keys(10, limit - 2, maxChanges: 1) }
    #expect(tenBatches?.description.contains("the 10 batches this input needs: the longest key they need, K#10, would be \(limit + 1) bytes") == true)
  }

  /// `pushline publish` with a 255-byte key and 10,001 cards (two batches, the second's key
  /// 257 bytes) refuses before sending anything, rather than publishing the first batch and
  /// failing on the second on every run; with a 254-byte key, both batches go.
  @Test func aKeyTooLongForTheSecondBatchPublishesNothing() async throws {
    let total = BrokerConfiguration.defaultMaxChangesPerPublish + 1
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-publish-\(UUID()).jsonl").path
    let text = (0..<total).map { CardInputTests.line("card/\($0)") }.joined(separator: "\n")
    #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8)))
    defer { try? FileManager.default.removeItem(atPath: path) }

    let brokerHost = BrokerHost(
      storage: InMemoryBrokerStorage(), configuration: BrokerConfiguration(),
      secret: Array("0123456789abcdef0123456789abcdef".utf8), host: "127.0.0.1", port: 0)
    try await brokerHost.run { running in
      let token = try await running.authority.mint(
        subject: "test", role: .admin, topics: ["driver/8"], expiresAtMillis: WallClock.systemMillis() + 3_600_000)
      let address = "127.0.0.1:\(running.address.port!)"
      func publish(keySize: Int) async throws {
        try await PublishCommand.parse([
          address, "--topic", "driver/8", path, "--idempotency-key", String(repeating: "k", count: keySize), "--token", token,
        ]).run()
      }
      func topic() async throws -> TopicUpdate {
        var configuration = ClientConnectionStateMachine.Configuration()
        configuration.authToken = token
        return try await RPCClient.withConnection(host: "127.0.0.1", port: running.address.port!, configuration: configuration) {
          try await $0.unary(BrokerService.getCardsMethod, request: GetCardsRequest(topic: "driver/8"), response: TopicUpdate.self)
        }
      }

      let refused = await #expect(throws: CommandFailure.self) { try await publish(keySize: 255) }
      #expect(refused?.description.contains("--idempotency-key of 255 bytes is too long for the 2 batches") == true)
      let untouched = try await topic()
      #expect(untouched.changes.count == 0)
      #expect(untouched.throughOffset == 0)

      try await publish(keySize: 254)
      let published = try await topic()
      #expect(published.changes.count == total)
      #expect(published.throughOffset == Int64(total))
    }
  }

  @Test func aRemovalOfACardAlreadyInThePublishIsRefused() throws {
    let cards = [CardInputTests.card("a")]
    #expect(try PublishCommand.changes(upserting: cards, removing: ["b"]).map(\.cardID) == ["a", "b"])
    #expect(throws: CommandFailure.self) { try PublishCommand.changes(upserting: cards, removing: ["a"]) }
    #expect(throws: CommandFailure.self) { try PublishCommand.changes(upserting: [], removing: ["b", "b"]) }
  }

  /// A card the broker would refuse is refused before anything is sent: published in batches,
  /// the ones before it would be applied first.
  @Test func aCardOverTheBrokersLimitIsRefusedBeforeAnythingIsSent() throws {
    var large = CardInputTests.card("large")
    var outage = OutageState()
    outage.message = String(repeating: "x", count: Broker.maxCardSize)
    large.outageState = outage
    let error = #expect(throws: CommandFailure.self) { try PublishCommand.changes(upserting: [CardInputTests.card("a"), large], removing: []) }
    #expect(error?.description == "card \"large\" is \(large.encodedSize()) bytes, over the broker's limit of 65536 a card; nothing was published")
  }

  /// A cardID the broker would refuse — empty, with a NUL byte, over 256 bytes, not in NFC —
  /// is refused before anything is sent, in a card or in a removal: in a later batch, it would
  /// fail the publish halfway, every run.
  @Test(arguments: ["", "a\u{0}b", String(repeating: "x", count: Broker.maxKeySize + 1), "e\u{301}"])
  func aCardIDTheBrokerRefusesIsRefusedBeforeAnythingIsSent(id: String) throws {
    let good = (0...BrokerConfiguration.defaultMaxChangesPerPublish).map { CardInputTests.card("card/\($0)") }
    let removed = #expect(throws: CommandFailure.self) { try PublishCommand.changes(upserting: good, removing: [id]) }
    #expect(removed?.description.hasPrefix("--remove: ") == true && removed?.description.hasSuffix("; nothing was published") == true)
    let upserted = #expect(throws: CommandFailure.self) { try PublishCommand.changes(upserting: good + [CardInputTests.card(id)], removing: []) }
    #expect(upserted?.description.hasPrefix("a card: ") == true)
    #expect(try PublishCommand.changes(upserting: good, removing: [String(repeating: "x", count: Broker.maxKeySize), "\u{e9}"]).count == good.count + 2)
  }

  /// More cards than one publish may carry go as two publishes, each acknowledged with its
  /// offsets, and all of them reach the topic; run again with the same key, both are replays.
  @Test func moreThanOnePublishCarriesGoesInBatchesToARealBroker() async throws {
    let total = BrokerConfiguration.defaultMaxChangesPerPublish + 2
    let text = (0..<total).map { CardInputTests.line("card/\($0)") }.joined(separator: "\n")
    let changes = try PublishCommand.changes(upserting: CardInput.cards(in: text), removing: ["gone"])
    let requests = try PublishRequest.batches(
      of: changes, to: "driver/7", idempotencyKey: "run-1",
      maxChanges: BrokerConfiguration.defaultMaxChangesPerPublish, maxBytes: BrokerService.connectionLimits.maxMessageSize,
      maxKeySize: Broker.maxKeySize)
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
