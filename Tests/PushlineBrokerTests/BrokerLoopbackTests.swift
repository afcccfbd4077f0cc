import NIOCore
@testable import PushlineBroker
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import PushlineTesting
import PushlineWire
import Synchronization
import Testing

/// The broker's services over real sockets on 127.0.0.1.
@Suite("Broker over loopback TCP")
struct BrokerLoopbackTests {
  static let secret = Array("0123456789abcdef0123456789abcdef".utf8)

  struct Harness {
    var port: Int
    var broker: Broker
    var authority: TokenAuthority

    func token(_ role: Role, _ topics: [String], ttl: Int64 = 3_600_000) async throws -> String {
      try await authority.mint(subject: "test", role: role, topics: topics, expiresAtMillis: WallClock.systemMillis() + ttl)
    }

    func connect<Result: Sendable>(token: String?, _ body: (RPCConnection) async throws -> Result) async throws -> Result {
      var configuration = ClientConnectionStateMachine.Configuration()
      configuration.authToken = token
      return try await RPCClient.withConnection(host: "127.0.0.1", port: port, configuration: configuration, body)
    }
  }

  static func withBroker(
    nowMillis: @escaping @Sendable () -> Int64 = WallClock.systemMillis, configure: (inout BrokerConfiguration) -> Void = { _ in },
    _ body: (Harness) async throws -> Void
  ) async throws {
    var configuration = BrokerConfiguration(nowMillis: nowMillis)
    configure(&configuration)
    let broker = try await Broker(storage: InMemoryBrokerStorage(), configuration: configuration)
    let authority = try await TokenAuthority(secret: secret, nowMillis: nowMillis)
    var router = RPCRouter()
    BrokerService.register(broker, authority: authority, in: &router)
    try await RPCServer(router: router, configuration: .init(port: 0)).withRunningServer { address in
      try await body(Harness(port: address.port!, broker: broker, authority: authority))
    }
  }

  static func publish(_ connection: RPCConnection, _ topic: String, _ cards: [TrackerCard], removing: [String] = []) async throws
    -> PublishResponse
  {
    try await connection.unary(
      BrokerService.publishMethod,
      request: PublishRequest(topic: topic, changes: cards.map { CardChange(upserting: $0) } + removing.map { CardChange(removing: $0) }),
      response: PublishResponse.self)
  }

  /// The updates of a subscription of `connection` to `topic`, from no position (a snapshot
  /// comes first).
  static func updates(of topic: String, on connection: RPCConnection) -> RPCResponseStream<TopicUpdate>.AsyncIterator {
    connection.serverStreaming(
      BrokerService.subscribeMethod, request: SubscribeRequest(topics: [TopicPosition(topic: topic)]), response: TopicUpdate.self
    ).makeAsyncIterator()
  }

  /// Subscribes to driver/7 on a connection of its own, runs `publish` with a publisher's
  /// connection once the subscription is live, and expects the subscriber to reach offset 4
  /// with card a at version 2 and nothing else, its deliveries keeping the contract. Then runs
  /// `afterwards` with the subscriber's connection.
  static func expectADriver7Subscriber(
    in harness: Harness, toSee publish: (RPCConnection) async throws -> Void,
    afterwards: (RPCConnection) async throws -> Void = { _ in }
  ) async throws {
    let publisherToken = try await harness.token(.publisher, ["driver/*"])
    let subscriberToken = try await harness.token(.subscriber, ["driver/7"])
    try await harness.connect(token: subscriberToken) { subscriber in
      var updates = Self.updates(of: "driver/7", on: subscriber)
      var replica = TopicReplica()
      replica.apply(try #require(try await updates.next()))  // the (empty) snapshot comes first
      try await harness.connect(token: publisherToken, publish)
      while replica.position != 4 { replica.apply(try #require(try await updates.next())) }
      #expect(replica.violations.isEmpty)
      #expect(replica.cards == ["a": card("a", 2)])
      try await afterwards(subscriber)
    }
  }

  @Test func publishedCardsReachASubscriberAndGetCards() async throws {
    try await Self.withBroker { harness in
      try await Self.expectADriver7Subscriber(in: harness) { publisher in
        _ = try await Self.publish(publisher, "driver/7", [card("a", 1), card("b", 1)])
        _ = try await Self.publish(publisher, "driver/7", [card("a", 2)], removing: ["b"])
      } afterwards: { subscriber in
        let pulled = try await subscriber.unary(
          BrokerService.getCardsMethod, request: GetCardsRequest(topic: "driver/7"), response: TopicUpdate.self)
        #expect(pulled.isSnapshot && pulled.changes.compactMap(\.card) == [card("a", 2)] && pulled.throughOffset == 4)
      }
    }
  }

  /// A publish stream answers each publish in order with its outcome: the offsets, a
  /// refusal's status — after which the stream goes on — or a replay of an idempotent retry.
  @Test func aPublishStreamAnswersEachPublishAndGoesOnPastARefusal() async throws {
    try await Self.withBroker { harness in
      try await Self.expectADriver7Subscriber(in: harness) { publisher in
        let stream = publisher.pipeline(BrokerService.publishStreamMethod, request: PublishRequest.self, response: PublishOutcome.self)
        let first = try await stream.send(PublishRequest(topic: "driver/7", changes: [CardChange(upserting: card("a", 1)), CardChange(upserting: card("b", 1))]))
        #expect(first.status == nil && first.response?.firstOffset == 1 && first.response?.lastOffset == 2)
        let elsewhere = try await stream.send(PublishRequest(topic: "fleet/1", changes: [CardChange(upserting: card("a", 1))]))
        #expect(elsewhere.response == nil && elsewhere.status?.code == StatusCode.permissionDenied.rawValue)
        let empty = try await stream.send(PublishRequest(topic: "driver/7", changes: []))
        #expect(empty.status?.code == StatusCode.invalidArgument.rawValue)
        var last = PublishRequest(topic: "driver/7", changes: [CardChange(upserting: card("a", 2)), CardChange(removing: "b")])
        last.idempotencyKey = "last"
        let applied = try await stream.send(last)
        let replayed = try await stream.send(last)
        #expect(applied.response?.lastOffset == 4 && applied.response?.replayed != true)
        #expect(replayed.response?.lastOffset == 4 && replayed.response?.replayed == true)
        try await stream.finish()
      }
    }
  }

  /// Over sockets as in process: a resume from another epoch, or from below the tombstone
  /// floor, gets a snapshot positioned at the top, and a card that has expired is not in it.
  @Test func resumesThatCannotCatchUpGetASnapshotWithoutExpiredCards() async throws {
    let clock = ManualWallClock(WallClock.systemMillis())
    try await Self.withBroker(nowMillis: clock.function, configure: { $0.maxTombstonesPerTopic = 0 }) { harness in
      let topic = "driver/9"
      let (writer, reader) = (try await harness.token(.publisher, [topic]), try await harness.token(.subscriber, [topic]))
      let top = try await harness.connect(token: writer) { publisher in
        _ = try await Self.publish(publisher, topic, [card("soon", 1, expiresAt: clock.now / 1000 + 60), card("b", 1)])
        // 17 removals pass the limit of 0 by the minimum slack of 16: the floor rises past them.
        let removed = (0..<17).map { "r\($0)" }
        _ = try await Self.publish(publisher, topic, removed.map { card($0, 1) })
        return try await Self.publish(publisher, topic, [], removing: removed)
      }
      // The prune is committed right after the publish it follows: wait for it.
      while harness.broker.state.withLock({ $0.topics[topic]!.floorOffset }) != top.lastOffset { await Task.yield() }
      clock.advance(by: .seconds(61))
      for (epoch, offset) in [(top.epoch + 1, top.lastOffset), (top.epoch, 2)] {
        let request = SubscribeRequest(topics: [TopicPosition(topic: topic, epoch: epoch, offset: offset)])
        let first = try await harness.connect(token: reader) { subscriber in
          var updates = subscriber.serverStreaming(BrokerService.subscribeMethod, request: request, response: TopicUpdate.self).makeAsyncIterator()
          return try await updates.next()
        }
        #expect(first?.isSnapshot == true && first?.epoch == top.epoch && first?.throughOffset == top.lastOffset, "from \(epoch), \(offset)")
        #expect(first?.changes.map(\.cardID) == ["b"], "from \(epoch), \(offset)")
      }
    }
  }

  /// A token that expires while a publish stream is open ends the stream with
  /// UNAUTHENTICATED: every publish after it would be refused, so the publisher must
  /// reconnect with a new token.
  @Test func aTokenExpiringMidPublishStreamEndsTheStream() async throws {
    let clock = ManualWallClock(WallClock.systemMillis())
    try await Self.withBroker(nowMillis: clock.function) { harness in
      let token = try await harness.authority.mint(
        subject: "test", role: .publisher, topics: ["driver/5"], expiresAtMillis: clock.now + 60_000)
      try await harness.connect(token: token) { publisher in
        let stream = publisher.pipeline(BrokerService.publishStreamMethod, request: PublishRequest.self, response: PublishOutcome.self)
        let request = PublishRequest(topic: "driver/5", changes: [CardChange(upserting: card("a", 1))])
        let first = try await stream.send(request)
        #expect(first.response?.firstOffset == 1)
        clock.advance(by: .seconds(61))
        await expectStatus(.unauthenticated) { try await stream.send(request) }
        await expectStatus(.unauthenticated) { try await stream.send(request) }
      }
    }
  }

  /// A publish refused because too many wait for storage ends its PublishStream there: a
  /// smaller publish read behind it, in the same burst, which would have fitted, is not applied
  /// (it would overtake the refused one's retry). Sent in one write, on a connection whose
  /// token was verified before; the bound takes the first publish and the last, not the middle.
  @Test(.timeLimit(.minutes(1))) func aPublishRefusedPastTheInFlightBoundEndsItsStream() async throws {
    func request(_ card: TrackerCard) -> PublishRequest { PublishRequest(topic: "t", changes: [CardChange(upserting: card)]) }
    let (first, refused, behind) = (request(card("first", 1)), request(titled("refused", bytes: 2000)), request(card("behind", 1)))
    let bound = [first, behind].reduce(0) { $0 + PendingPublish.byteCount(of: EncodedPublishRequest(encoding: $1)) }
    try await Self.withBroker(configure: { $0.maxInFlightPublishBytes = bound }) { harness in
      let token = try await harness.token(.publisher, ["t"])
      _ = try await harness.authority.authenticate(token)
      var hello = ClientHello(minVersion: 1, maxVersion: 1)
      hello.authToken = token
      let frames = [
        Frame(kind: .handshake, callID: 0, payload: hello.serializedBytes()),
        Frame(kind: .callStart, callID: 1, payload: CallStart(method: BrokerService.publishStreamMethod).serializedBytes()),
      ] + [first, refused, behind].map { Frame(kind: .message, callID: 1, payload: [0] + $0.serializedBytes()) } + [
        Frame(kind: .halfClose, callID: 99)  // a call never started: the server closes the connection
      ]
      _ = try await RawPeer.send(ConnectionPreface().bytes + frames.flatMap(\.bytes), to: harness.port)
      // Answered once committed, with or after what the stream's publishes were: they are in.
      _ = try await harness.connect(token: token) { try await Self.publish($0, "t", [card("after", 1)]) }
      let reader = try await harness.token(.subscriber, ["t"])
      let cards = try await harness.connect(token: reader) { connection in
        try await connection.unary(BrokerService.getCardsMethod, request: GetCardsRequest(topic: "t"), response: TopicUpdate.self)
      }
      #expect(cards.changes.map(\.cardID) == ["first", "after"])
    }
  }

  /// A stream that ends frees its subscription: the transport's pump, which the subscription
  /// holds while it streams, holds the subscription too.
  @Test func anEndedStreamFreesItsSubscription() async throws {
    try await Self.withBroker { harness in
      let token = try await harness.token(.subscriber, ["driver/8"])
      weak var subscription: Subscription?
      try await harness.connect(token: token) { subscriber in
        var updates = Self.updates(of: "driver/8", on: subscriber)
        _ = try #require(try await updates.next())  // the snapshot: the stream is live
        subscription = harness.broker.state.withLock { $0.subscriptions.values.first }
        #expect(subscription != nil)
      }
      // The handler's task and a pull already queued on the loop may hold it a moment longer;
      // a leak holds it for good.
      let clock = ContinuousClock(), deadline = clock.now + .seconds(10)
      while subscription != nil && clock.now < deadline { await Task.yield() }
      #expect(subscription == nil)
    }
  }

  /// On shutdown a subscription ends when its connection's GOAWAY goes out — not at the end
  /// of the grace period — with UNAVAILABLE and a retry hint within the reconnect spread.
  @Test(.timeLimit(.minutes(1))) func aShutdownEndsAStreamAtItsConnectionsGoAwayWithARetryHint() async throws {
    var configuration = BrokerConfiguration()
    configuration.reconnectSpread = .seconds(2)
    let broker = try await Broker(storage: InMemoryBrokerStorage(), configuration: configuration)
    let authority = try await TokenAuthority(secret: Self.secret, nowMillis: WallClock.systemMillis)
    var router = RPCRouter()
    BrokerService.register(broker, authority: authority, in: &router)
    let (ports, reportPort) = AsyncStream<Int>.makeStream()
    let (stop, stopServer) = AsyncStream<Void>.makeStream()
    let server = Task {
      // A grace period far longer than the test may take: the stream must not wait for it.
      try await RPCServer(router: router, configuration: .init(port: 0, gracePeriod: .seconds(600))).withRunningServer { address in
        reportPort.yield(address.port!)
        for await _ in stop { break }
      }
    }
    var portIterator = ports.makeAsyncIterator()
    let harness = Harness(port: try #require(await portIterator.next()), broker: broker, authority: authority)
    let token = try await harness.token(.subscriber, ["driver/9"])
    try await harness.connect(token: token) { subscriber in
      var updates = Self.updates(of: "driver/9", on: subscriber)
      _ = try #require(try await updates.next())  // the snapshot: the stream is live
      stopServer.yield()
      do {
        while try await updates.next() != nil {}
        Issue.record("the stream ended without a status")
      } catch let error as RPCError {
        #expect(error.code == .unavailable && error.message == "the broker is shutting down")
        #expect((0...2000).contains(try #require(error.retryAfterMillis)))
      }
    }
    try await server.value
  }

  /// A token that expires mid-stream ends the stream with UNAUTHENTICATED, and the stream's
  /// end lets go of the subscription.
  @Test func aTokenExpiringMidStreamEndsTheStreamAndItsSubscription() async throws {
    let clock = ManualWallClock(WallClock.systemMillis())
    try await Self.withBroker(nowMillis: clock.function) { harness in
      let token = try await harness.authority.mint(
        subject: "test", role: .subscriber, topics: ["driver/5"], expiresAtMillis: clock.now + 60_000)
      try await harness.connect(token: token) { subscriber in
        var updates = Self.updates(of: "driver/5", on: subscriber)
        _ = try #require(try await updates.next())  // the snapshot: the stream is live
        #expect(harness.broker.subscriptionCount == 1)
        clock.advance(by: .seconds(61))
        harness.broker.tick()
        await #expect { while try await updates.next() != nil {} } throws: { ($0 as? RPCError)?.code == .unauthenticated }
      }
      // The status went out before the server let go of the subscription: wait for that.
      let deadline = ContinuousClock.now + .seconds(10)
      while harness.broker.subscriptionCount != 0 && ContinuousClock.now < deadline { await Task.yield() }
      #expect(harness.broker.subscriptionCount == 0)
    }
  }

  @Test func aDroppedConnectionResumesWithOnlyWhatItMissed() async throws {
    try await Self.withBroker { harness in
      let publisherToken = try await harness.token(.publisher, ["*"])
      let subscriberToken = try await harness.token(.subscriber, ["driver/9"])
      var truth: [String: TrackerCard] = [:]
      var replica = TopicReplica()
      try await harness.connect(token: publisherToken) { publisher in
        for version in 1...20 {
          let batch = [card("c\(version % 5)", version)]
          _ = try await Self.publish(publisher, "driver/9", batch)
          truth[batch[0].cardID] = batch[0]
        }
      }
      // First connection: read until offset 10 or beyond, then the connection goes away.
      try await harness.connect(token: subscriberToken) { subscriber in
        for try await update in subscriber.serverStreaming(
          BrokerService.subscribeMethod, request: SubscribeRequest(topics: [TopicPosition(topic: "driver/9")]),
          response: TopicUpdate.self)
        {
          replica.apply(update)
          if (replica.position ?? 0) >= 10 { break }
        }
      }
      try await harness.connect(token: publisherToken) { publisher in
        for version in 21...40 {
          let batch = [card("c\(version % 7)", version)]
          _ = try await Self.publish(publisher, "driver/9", batch)
          truth[batch[0].cardID] = batch[0]
        }
        _ = try await Self.publish(publisher, "driver/9", [], removing: ["c1"])
        truth["c1"] = nil
      }
      // Second connection: resume from the stored position.
      try await harness.connect(token: subscriberToken) { subscriber in
        var first = true
        for try await update in subscriber.serverStreaming(
          BrokerService.subscribeMethod,
          request: SubscribeRequest(topics: [TopicPosition(topic: "driver/9", epoch: replica.epoch, offset: replica.position)]),
          response: TopicUpdate.self)
        {
          if first { #expect(!update.isSnapshot) }
          first = false
          replica.apply(update)
          if replica.position == 41 { break }
        }
      }
      #expect(replica.violations.isEmpty)
      #expect(replica.cards == truth)
    }
  }

  @Test func theAuthMatrixGetsItsStatusesWhileOthersKeepBeingServed() async throws {
    try await Self.withBroker { harness in
      let subscriberToken = try await harness.token(.subscriber, ["driver/1"])
      let publisherToken = try await harness.token(.publisher, ["driver/1"])
      let forged = try await TokenAuthority(secret: Array(repeating: 1, count: 32), nowMillis: WallClock.systemMillis)
        .mint(subject: "x", role: .admin, topics: ["*"], expiresAtMillis: WallClock.systemMillis() + 60_000)
      let expired = try await harness.token(.admin, ["*"], ttl: -1000)
      let cases: [(String?, String, StatusCode)] = [
        (nil, "driver/1", .unauthenticated), (forged, "driver/1", .unauthenticated), (expired, "driver/1", .unauthenticated),
        (publisherToken, "driver/1", .permissionDenied), (subscriberToken, "driver/2", .permissionDenied),
      ]
      try await harness.connect(token: subscriberToken) { good in
        var updates = Self.updates(of: "driver/1", on: good)
        _ = try await updates.next()
        for (token, topic, code) in cases {
          try await harness.connect(token: token) { connection in
            await expectStatus(code) {
              for try await _ in connection.serverStreaming(
                BrokerService.subscribeMethod, request: SubscribeRequest(topics: [TopicPosition(topic: topic)]),
                response: TopicUpdate.self)
              {}
            }
          }
        }
        try await harness.connect(token: subscriberToken) { connection in
          await expectStatus(.permissionDenied) { try await Self.publish(connection, "driver/1", [card("a", 1)]) }
        }
        try await harness.connect(token: publisherToken) { connection in
          await expectStatus(.invalidArgument) {  // a change without its required cardID does not decode
            try await connection.unary(
              BrokerService.publishMethod, request: { var entry = MetadataEntry(key: "driver/1"); entry.value = "garbage"; return entry }(), response: PublishResponse.self)
          }
          _ = try await Self.publish(connection, "driver/1", [card("still-served", 1)])
        }
        let update = try #require(try await updates.next())
        #expect(update.changes.map(\.cardID) == ["still-served"])
      }
    }
  }
}
