import PushlineBroker
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import PushlineTesting
import PushlineWire
import Testing

/// Bad input sent to a broker over real sockets, each on a connection of its own — garbage
/// bytes, publishes over the message size, cards over their size limit or without a required
/// field — gets the answer docs/PROTOCOL.md documents (2.5, 3.2, 3.5), while a subscriber on
/// another connection keeps receiving live updates after each.
@Suite("Bad input to a broker over loopback TCP")
struct BadInputLoopbackTests {
  /// The subscriber of driver/1 and the well-behaved publisher to it.
  struct WellBehaved {
    var updates: RPCResponseStream<TopicUpdate>.AsyncIterator
    var publisher: RPCConnection
    var version = 0

    /// Publishes the next version of card `still-served` and expects the subscriber's next
    /// update to carry that change alone: the stream is live, and nothing of `badInput` reached
    /// the topic.
    mutating func expectStillServed(after badInput: String) async throws {
      version += 1
      let sent = card("still-served", version)
      _ = try await BrokerLoopbackTests.publish(publisher, "driver/1", [sent])
      let update = try #require(try await updates.next(), "the stream ended after \(badInput)")
      #expect(update.changes.map(\.card) == [sent], "after \(badInput)")
    }
  }

  @Test func badInputGetsItsDocumentedAnswerWhileASubscriberKeepsReceiving() async throws {
    try await BrokerLoopbackTests.withBroker { harness in
      let publisherToken = try await harness.token(.publisher, ["driver/1"])
      let subscriberToken = try await harness.token(.subscriber, ["driver/1"])
      try await harness.connect(token: subscriberToken) { subscriber in
        var updates = BrokerLoopbackTests.updates(of: "driver/1", on: subscriber)
        _ = try #require(try await updates.next())  // the (empty) snapshot: the stream is live
        try await harness.connect(token: publisherToken) { publisher in
          var wellBehaved = WellBehaved(updates: updates, publisher: publisher)
          try await Self.expectGarbageCutOff(port: harness.port, while: &wellBehaved)
          try await Self.expectOversizedPublishesRefused(harness, token: publisherToken, while: &wellBehaved)
          try await Self.expectCardsWithoutARequiredFieldRefused(harness, token: publisherToken, while: &wellBehaved)
        }
      }
    }
  }

  /// Garbage in place of the preface, and garbage in place of a frame after a good handshake:
  /// each is answered with the broker's preface (and ServerHello), a GOAWAY INTERNAL naming
  /// the violation, and the end of the connection (2.5).
  static func expectGarbageCutOff(port: Int, while wellBehaved: inout WellBehaved) async throws {
    let tlsHello: [UInt8] = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03] + Array(repeating: 0x5a, count: 32)
    let badPreface = try await goAway(answering: tlsHello, port: port, afterHandshake: false)
    #expect(badPreface.code == StatusCode.internal.rawValue)
    #expect(badPreface.message == "bad preface: the connection does not start with PUSHLINE")
    try await wellBehaved.expectStillServed(after: "garbage in place of the preface")

    let badFrame = try await goAway(answering: RawPeer.opening + Array(repeating: 0xff, count: 64), port: port, afterHandshake: true)
    #expect(badFrame.code == StatusCode.internal.rawValue)
    #expect(badFrame.message == "reserved bit set: the reserved bit of the call id is set")
    try await wellBehaved.expectStillServed(after: "garbage in place of a frame")
  }

  /// Sends `bytes` on a connection of its own and returns the GOAWAY the broker answers
  /// with, expecting before it only the broker's preface and, `afterHandshake`, its
  /// ServerHello; `RawPeer` returns once the broker has closed the connection.
  static func goAway(answering bytes: [UInt8], port: Int, afterHandshake: Bool) async throws -> GoAway {
    let elements = try RawPeer.elements(in: try await RawPeer.send(bytes, to: port))
    let goAway = try #require(elements.last?.frame, "\(elements)")
    #expect(goAway.kind == .goAway && goAway.callID == 0)
    #expect(elements.dropLast().map(\.frame?.kind) == (afterHandshake ? [nil, .handshake] : [nil]), "\(elements)")
    return try GoAway(serializedBytes: goAway.payload)
  }

  /// A publish over the maximum message size ends its call with RESOURCE_EXHAUSTED, sent as
  /// it is (its frames together exceed the limit) or deflated (it inflates past it) (2.5,
  /// 2.9); a card over 64 KiB, in a publish within the size, is refused with INVALID_ARGUMENT
  /// (3.2).
  static func expectOversizedPublishesRefused(
    _ harness: BrokerLoopbackTests.Harness, token: String, while wellBehaved: inout WellBehaved
  ) async throws {
    let limit = ConnectionLimits.defaults.maxMessageSize
    let cardCount = limit / 60_000 + 1
    let oversized = PublishRequest(
      topic: "driver/1", changes: (0..<cardCount).map { CardChange(upserting: titled("big\($0)", bytes: 60_000)) })
    #expect(oversized.encodedSize() > limit)

    let uncompressed = ClientConnectionStateMachine.Configuration(compressions: [], authToken: token)
    try await RPCClient.withConnection(host: "127.0.0.1", port: harness.port, configuration: uncompressed) { offender in
      let refusal = await refusal(of: oversized, on: offender)
      #expect(refusal?.code == .resourceExhausted)
      let announced = try #require(refusal?.message.wholeMatch(of: #/a message of (\d+) bytes, limit (\d+)/#), "\(String(describing: refusal))")
      #expect(Int(announced.1).map { $0 > limit } == true && Int(announced.2) == limit)
    }
    try await wellBehaved.expectStillServed(after: "a publish over the message size")

    try await harness.connect(token: token) { offender in
      try await offender.handshake()  // deflate is agreed: the publish goes compressed
      let refusal = await refusal(of: oversized, on: offender)
      #expect(refusal?.code == .resourceExhausted)
      #expect(refusal?.message == "a compressed message inflates past the limit of \(limit) bytes")
    }
    try await wellBehaved.expectStillServed(after: "a compressed publish that inflates past the message size")

    let bigCard = titled("big", bytes: Broker.maxCardSize)
    try await harness.connect(token: token) { offender in
      let refusal = await refusal(of: PublishRequest(topic: "driver/1", changes: [CardChange(upserting: bigCard)]), on: offender)
      #expect(refusal?.code == .invalidArgument)
      #expect(refusal?.message == "changes[0]: a card of \(bigCard.encodedSize()) bytes, limit \(Broker.maxCardSize)")
    }
    try await wellBehaved.expectStillServed(after: "a card over 64 KiB")
  }

  /// Cards whose bytes, written here by hand, lack a required field — at the top, or in a
  /// sub-message of the payload — are refused with INVALID_ARGUMENT naming the field's path
  /// and the offset where the input ends (1.2, 3.2): the broker checks them as it decodes the
  /// request.
  static func expectCardsWithoutARequiredFieldRefused(
    _ harness: BrokerLoopbackTests.Harness, token: String, while wellBehaved: inout WellBehaved
  ) async throws {
    // cardID "x", priority 1.0.
    let withoutIsValid: [UInt8] = [0x0a, 0x01, 0x78, 0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x3f]
    // The same with isValid true, and a payload whose daily-earnings section lacks its title.
    let withoutTitle = withoutIsValid + [0x18, 0x01, 0x22, 0x02, 0x12, 0x00]
    let cases = [(withoutIsValid, "isValid"), (withoutTitle, "payload.trackerDailyEarningsCard.title")]
    try await harness.connect(token: token) { offender in
      for (bytes, path) in cases {
        var card = EncodedCard()
        try bytes.withUnsafeBytes { try card.merge(serializedBytes: $0) }
        let request = PublishRequestMessage(topic: "driver/1", changes: [CardChangeMessage(upserting: card)])
        let refusal = await refusal(of: request, on: offender)
        #expect(refusal?.code == .invalidArgument)
        #expect(
          refusal?.message
            == "pushline.broker.PublishRequest: missing required field at byte \(request.encodedSize()) "
            + "(pushline.broker.PublishRequest.changes[0].card.\(path))")
      }
    }
    try await wellBehaved.expectStillServed(after: "cards without a required field")
  }

  /// The status that refused `request`, published on `connection`; `nil` (and an issue) if
  /// the broker took it.
  static func refusal<Card: CardRepresentation>(of request: PublishRequestMessage<Card>, on connection: RPCConnection) async
    -> RPCError?
  {
    do {
      let response = try await connection.unary(BrokerService.publishMethod, request: request, response: PublishResponse.self)
      Issue.record("the broker took a bad publish: \(response)")
    } catch let error as RPCError {
      return error
    } catch {
      Issue.record("expected a status, got \(error)")
    }
    return nil
  }
}
