import NIOCore
import NIOPosix
@testable import PushlineBroker
import PushlineRPC
@testable import PushlineRPCNIO
import PushlineSchema
import PushlineWire
import Synchronization
import Testing

/// A subscriber that stops reading while a publisher hammers its topic: the broker's memory
/// for it stays bounded by the topic's cards (newer versions replace queued ones), another
/// subscriber of the same topic is not slowed, and once the slow one reads again it reaches
/// exactly the publishers' state.
@Suite("A slow consumer over loopback")
struct SlowConsumerTests {
  /// Sends `opening` once connected (from the event loop, as a real client sends its
  /// handshake, so that a busy test process cannot make it late for the server's handshake
  /// deadline), then collects what the server sends to a connection that reads only when told
  /// to.
  final class Collector: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let opening: [UInt8]
    let received = Mutex(ByteBuffer())
    let arrivals = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))

    init(opening: [UInt8]) {
      self.opening = opening
    }

    func channelActive(context: ChannelHandlerContext) {
      context.writeAndFlush(NIOAny(ByteBuffer(bytes: opening)), promise: nil)
      context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
      var chunk = unwrapInboundIn(data)
      received.withLock { _ = $0.writeBuffer(&chunk) }
      arrivals.continuation.yield()
    }
  }

  static let cardCount = 20

  static func card(_ index: Int, version: Int) -> TrackerCard {
    var card = TrackerCard(cardID: "c\(index)", priority: Double(version), isValid: true)
    card.lastUpdatedAt = Int64(version)
    var trip = TrackerRecentTripsCard(title: String(repeating: "x", count: 4000))  // big, to fill the socket buffers fast
    trip.formattedTotal = "$\(version)"
    card.payload = TrackerCardPayload()
    card.payload?.trackerRecentTripsCard = trip
    return card
  }

  @Test func memoryStaysBoundedAndTheSlowSubscriberCatchesUpExactly() async throws {
    try await BrokerLoopbackTests.withBroker { harness in
      let topic = "driver/slow"
      let readerToken = try await harness.token(.subscriber, [topic])
      let publisherToken = try await harness.token(.publisher, [topic])

      // The slow subscriber: raw bytes, reads disabled.
      var hello = ClientHello(minVersion: 1, maxVersion: 1)
      hello.authToken = readerToken
      let request = SubscribeRequest(topics: [TopicPosition(topic: topic)])
      let opening =
        ConnectionPreface().bytes + Frame(kind: .handshake, callID: 0, payload: hello.serializedBytes()).bytes
        + Frame(kind: .callStart, callID: 1, payload: CallStart(method: BrokerService.subscribeMethod).serializedBytes()).bytes
        + Frame(kind: .message, callID: 1, payload: [0] + request.serializedBytes()).bytes + Frame(kind: .halfClose, callID: 1).bytes
      let collector = Collector(opening: opening)
      let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .channelOption(.autoRead, value: false)
        .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(collector) } }
        .connect(host: "127.0.0.1", port: harness.port).get()
      while harness.broker.subscriptionCount < 1 { await Task.yield() }

      try await harness.connect(token: readerToken) { fast in
        var fastUpdates = fast.serverStreaming(BrokerService.subscribeMethod, request: request, response: TopicUpdate.self).makeAsyncIterator()
        var fastReplica = TopicReplica()
        var truth: [String: TrackerCard] = [:]
        try await harness.connect(token: publisherToken) { publisher in
          for version in 1...3000 {
            let next = Self.card(version % Self.cardCount, version: version)
            truth[next.cardID] = next
            _ = try await publisher.unary(
              BrokerService.publishMethod, request: PublishRequest(topic: topic, changes: [CardChange(upserting: next)]),
              response: PublishResponse.self)
            // The fast subscriber keeps up as it goes.
            if version % 100 == 0 {
              while fastReplica.position ?? 0 < Int64(version) { fastReplica.apply(try #require(try await fastUpdates.next())) }
            }
          }
        }
        #expect(fastReplica.cards == truth && fastReplica.violations.isEmpty)

        // The broker held at most one queued change per card for the stalled subscriber, and
        // had to coalesce to do so.
        let queues = harness.broker.state.withLock { Array($0.subscriptions.values) }.map { subscription in
          subscription.state.withLock { ($0.queue.changeCount, $0.queue.coalescedCount) }
        }
        #expect(queues.allSatisfy { $0.0 <= Self.cardCount })
        #expect(queues.contains { $0.1 > 0 }, "the stalled subscriber never made the broker coalesce: \(queues)")

        // Reading again, the slow subscriber ends with exactly the publishers' state.
        var slowReplica = TopicReplica()
        var decoder = FrameDecoder(maxPayloadLength: FrameHeader.maxPayloadLength)
        try await channel.setOption(.autoRead, value: true).get()
        channel.read()
        var arrivals = collector.arrivals.stream.makeAsyncIterator()
        var pending = ByteBuffer()
        while slowReplica.cards != truth {
          _ = await arrivals.next()
          var chunk = collector.received.withLock { buffer in
            defer { buffer.clear() }
            return buffer
          }
          pending.writeBuffer(&chunk)
          while let element = try decoder.decodeElement(from: &pending) {
            guard case .frame(let frame) = element, frame.kind == .message, frame.callID == 1 else { continue }
            slowReplica.apply(try TopicUpdate(serializedBytes: Array(frame.payload.dropFirst())))
          }
          pending.discardReadBytes()
        }
        #expect(slowReplica.violations.isEmpty)
      }
      try await channel.close()
    }
  }
}
