import CoreMetrics
import NIOCore
import NIOEmbedded
import PushlineRPC
@testable import PushlineRPCNIO
import PushlineSchema
import PushlineWire
import Synchronization
import Testing

/// The server's channel handler on an EmbeddedChannel: call handlers run as tasks on the
/// embedded loop's executor, so the test decides when they run (`embeddedEventLoop.run()`) and
/// when the channel is writable.
@Suite("Server connection handler on EmbeddedChannel")
struct ServerConnectionHandlerTests {
  static let stream = "/test.Stream/Count"
  static let echo = "/test.Echo/Echo"
  static let later = "/test.Later/Echo"
  static let pumped = "/test.Pumped/Feed"
  static let gated = "/test.Gated/Echo"

  /// Where the gated echo's handlers wait until the test opens it.
  final class Gate: Sendable {
    private let state = Mutex<(isOpen: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))
    /// How many handlers wait.
    var waiting: Int { state.withLock { $0.waiting.count } }

    func pass() async {
      await withCheckedContinuation { continuation in
        let isOpen = state.withLock { state in
          if !state.isOpen { state.waiting.append(continuation) }
          return state.isOpen
        }
        if isOpen { continuation.resume() }
      }
    }

    func open() {
      for waiter in state.withLock({ state in
        state.isOpen = true
        defer { state.waiting = [] }
        return state.waiting
      }) { waiter.resume() }
    }
  }

  /// How many responses a handler has written, read from the test.
  final class WriteCount: Sendable {
    private let count = Mutex(0)
    var value: Int { count.withLock { $0 } }
    func increment() { count.withLock { $0 += 1 } }
  }

  /// The calls of a completing handler that answers later, with their requests.
  final class HeldCalls: Sendable {
    let calls = Mutex<[(MetadataEntry, UnaryCompletion<MetadataEntry>)]>([])

    /// Answers every held call with its own request (an echo).
    func answerAll() {
      for (request, completion) in calls.withLock({ $0 }) { completion.succeed(request) }
    }
  }

  /// A pumped stream's source the test feeds, and the pump to wake once it has.
  final class Feed: ResponseSource {
    let queued = Mutex<[[UInt8]]>([])
    let pump = Mutex<(any ResponsePump)?>(nil)

    func nextResponses(into batch: inout ResponseBatch) {
      let messages = queued.withLock { queued in
        defer { queued = [] }
        return queued
      }
      for message in messages { batch.append(serialized: message) }
    }

    var hasMoreResponses: Bool { !queued.withLock(\.isEmpty) }

    /// Queues `message` and wakes the pump, as the broker's fan-out does.
    func send(_ message: MetadataEntry) {
      queued.withLock { $0.append(message.serializedBytes()) }
      pump.withLock { $0 }?.wake()
    }
  }

  /// A connected channel serving a stream of `value` responses, an echo, an echo answered
  /// later (its requests and completions go to `held`) and a pumped stream of what `feed` is
  /// sent, past its handshake (unless `handshakes` is false); `written` counts the responses
  /// the stream's handler has written.
  static func channel(
    written: WriteCount? = nil, held: HeldCalls? = nil, feed: Feed? = nil, gate: Gate? = nil, compressions: [Compression] = [],
    handshakeTimeout: TimeAmount? = nil, handshakes: Bool = true, maxBufferedRequestBytes: Int = 16 << 20
  ) throws -> (EmbeddedChannel, OutboundEventCounter<ConnectionElement>) {
    var router = RPCRouter()
    router.registerUnary(gated, request: MetadataEntry.self, response: MetadataEntry.self) { request, _ in
      await gate?.pass()
      return request
    }
    router.registerServerStreaming(pumped, request: MetadataEntry.self, response: MetadataEntry.self) { _, writer, _ in
      guard let feed, let pump = writer.pump(from: feed) else { return }
      feed.pump.withLock { $0 = pump }
    }
    router.registerUnary(later, request: MetadataEntry.self, response: MetadataEntry.self) { request, _, completion in
      held?.calls.withLock { $0.append((request, completion)) }
    }
    router.registerServerStreaming(stream, request: MetadataEntry.self, response: MetadataEntry.self) { request, writer, _ in
      for number in 1...(Int(request.value ?? "0") ?? 0) {
        try await writer.write(MetadataEntry(key: "\(number)"))
        written?.increment()
      }
    }
    router.registerUnary(echo, request: MetadataEntry.self, response: MetadataEntry.self) { request, _ in request }
    let channel = EmbeddedChannel()
    let counter = OutboundEventCounter<ConnectionElement>()
    try channel.pipeline.syncOperations.addHandlers([
      counter,
      ServerConnectionHandler(
        router: router, configuration: .init(maxBufferedRequestBytes: maxBufferedRequestBytes), gracePeriod: .seconds(10),
        handshakeTimeout: handshakeTimeout),
    ])
    try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 7400)).wait()
    guard handshakes else { return (channel, counter) }
    try channel.writeInbound(ConnectionElement.preface(ConnectionPreface()))
    var hello = ClientHello(minVersion: 1, maxVersion: 1)
    hello.compressions = compressions
    try channel.writeInbound(Self.frame(.handshake, 0, hello.serializedBytes()))
    #expect(try channel.readOutbound(as: ConnectionElement.self) == .preface(ConnectionPreface()))
    #expect(try Self.readFrames(channel).map(\.kind) == [.handshake])
    return (channel, counter)
  }

  static func frame(_ kind: FrameKind, _ callID: UInt32, _ payload: [UInt8] = []) -> ConnectionElement {
    .frame(Frame(kind: kind, callID: callID, payload: payload))
  }

  /// The frames that start a call of `method` with a request whose value is `value`.
  static func call(_ callID: UInt32, _ method: String, value: String) -> [ConnectionElement] {
    var request = MetadataEntry(key: "k")
    request.value = value
    return [
      frame(.callStart, callID, CallStart(method: method).serializedBytes()),
      frame(.message, callID, [0] + request.serializedBytes()),
      frame(.halfClose, callID),
    ]
  }

  /// Expects the frames written so far to be the answers to calls 1, 2 and 3 in order: a
  /// response and a status each.
  static func expectAnswersToCalls1To3(_ channel: EmbeddedChannel, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let frames = try readFrames(channel)
    #expect(frames.map(\.kind) == [.message, .status, .message, .status, .message, .status], sourceLocation: sourceLocation)
    #expect(frames.map(\.callID) == [1, 1, 2, 2, 3, 3], sourceLocation: sourceLocation)
  }

  /// Every frame written so far, in order (the handler writes a burst's frames gathered in one
  /// element).
  static func readFrames(_ channel: EmbeddedChannel) throws -> [Frame] {
    var frames: [Frame] = []
    while let element = try channel.readOutbound(as: ConnectionElement.self) { frames += element.frames }
    return frames
  }

  /// A connection that closes lets go of its handler (and so of its calls and buffers), even
  /// though the handler's answer inbox points back at it.
  @Test func aClosedConnectionLetsGoOfItsHandler() throws {
    weak var released: ServerConnectionHandler?
    do {
      let (channel, _) = try Self.channel()
      released = try channel.pipeline.syncOperations.handler(type: ServerConnectionHandler.self)
      #expect(released != nil)
      _ = try channel.finish()
    }
    #expect(released == nil)
  }

  /// A stream's writer goes on while the channel is writable, waits from the write that finds
  /// it full until it is writable again, then finishes.
  @Test func aStreamingWriterWaitsWhileTheChannelIsNotWritable() throws {
    let written = WriteCount()
    let (channel, _) = try Self.channel(written: written)
    // The call starts while the channel is writable; its handler's task runs once it is not.
    for element in Self.call(1, Self.stream, value: "5") { try channel.writeInbound(element) }
    // A channel tells its pipeline of each change (a socket channel as the write or flush
    // that makes it happens); an embedded one is told by hand.
    channel.isWritable = false
    channel.pipeline.fireChannelWritabilityChanged()
    channel.embeddedEventLoop.run()
    // The first response is written, and its write waits for the channel.
    #expect(written.value == 0)
    #expect(try Self.readFrames(channel).map(\.kind) == [.message])
    channel.embeddedEventLoop.run()
    #expect(written.value == 0)

    channel.isWritable = true
    channel.pipeline.fireChannelWritabilityChanged()
    channel.embeddedEventLoop.run()
    #expect(written.value == 5)
    #expect(try Self.readFrames(channel).map(\.kind) == [.message, .message, .message, .message, .status])
  }

  /// Calls that arrive while the channel is not writable (a peer that does not read) start
  /// once it is, in the order they came: a burst of them cannot each write a whole response
  /// while the earlier ones' wait.
  @Test func callsWaitToStartWhileTheChannelIsNotWritable() throws {
    let (channel, _) = try Self.channel()
    channel.isWritable = false
    channel.pipeline.fireChannelWritabilityChanged()
    for callID: UInt32 in [1, 3] {
      for element in Self.call(callID, Self.echo, value: "\(callID)") { try channel.writeInbound(element) }
    }
    channel.embeddedEventLoop.run()
    #expect(try Self.readFrames(channel).isEmpty)
    channel.isWritable = true
    channel.pipeline.fireChannelWritabilityChanged()
    channel.embeddedEventLoop.run()
    let frames = try Self.readFrames(channel)
    #expect(frames.map(\.kind) == [.message, .status, .message, .status] && frames.map(\.callID) == [1, 1, 3, 3])
  }

  /// A connection runs at most so many unary handler tasks at once: the calls past them wait
  /// to start, in order, and start as the running ones return.
  @Test func unaryHandlerTasksRunAFewAtATime() throws {
    let gate = Gate()
    let (channel, _) = try Self.channel(gate: gate)
    let limit = ServerConnectionHandler.maxRunningTasks
    let callIDs = (0...limit).map { UInt32(2 * $0 + 1) }
    for callID in callIDs {
      for element in Self.call(callID, Self.gated, value: "\(callID)") { try channel.writeInbound(element) }
    }
    channel.embeddedEventLoop.run()
    #expect(gate.waiting == limit)
    #expect(try Self.readFrames(channel).isEmpty)
    gate.open()
    channel.embeddedEventLoop.run()
    let frames = try Self.readFrames(channel)
    #expect(frames.filter { $0.kind == .status }.map(\.callID) == callIDs)
  }

  /// A call waiting for a task slot holds its request as a call still sending does: the
  /// connection's budget of held requests counts it until its handler starts, so a peer
  /// cannot pile requests up behind handlers that do not return. Running handlers' requests
  /// are theirs, and not counted.
  @Test func callsWaitingForATaskSlotCountAgainstTheBudgetOfHeldRequests() throws {
    let gate = Gate()
    let value = String(repeating: "v", count: 1_000)
    let (channel, _) = try Self.channel(gate: gate, maxBufferedRequestBytes: 2_500)
    let limit = ServerConnectionHandler.maxRunningTasks
    let callIDs = (0..<limit + 3).map { UInt32(2 * $0 + 1) }
    for callID in callIDs {
      for element in Self.call(callID, Self.gated, value: value) { try channel.writeInbound(element) }
      channel.embeddedEventLoop.run()
    }
    #expect(gate.waiting == limit)
    // Two calls wait for a slot, holding about 2,000 bytes; the third would pass 2,500.
    let refused = try Self.readFrames(channel)
    #expect(refused.map(\.kind) == [.status] && refused.map(\.callID) == [callIDs[limit + 2]])
    #expect(try refused.first.map { try CallStatus(serializedBytes: $0.payload).code } == StatusCode.resourceExhausted.rawValue)
    gate.open()
    channel.embeddedEventLoop.run()
    let answered = try Self.readFrames(channel).filter { $0.kind == .status }
    #expect(answered.map(\.callID) == Array(callIDs.prefix(limit + 2)))
    #expect(try answered.allSatisfy { try CallStatus(serializedBytes: $0.payload).code == StatusCode.ok.rawValue })
  }

  /// The responses of calls started in one read burst leave in one flush, after the handlers ran.
  @Test func callsOfOneReadBurstAreFlushedOnce() throws {
    let (channel, counter) = try Self.channel()
    let flushesBefore = counter.flushes
    for callID: UInt32 in 1...3 {
      for element in Self.call(callID, Self.echo, value: "\(callID)") {
        channel.pipeline.syncOperations.fireChannelRead(NIOAny(element))
      }
    }
    channel.pipeline.syncOperations.fireChannelReadComplete()
    channel.embeddedEventLoop.run()
    #expect(counter.flushes == flushesBefore + 1)
    try Self.expectAnswersToCalls1To3(channel)
  }

  /// A client that subscribes with its handshake, as the broker's subscribers do, gets the
  /// handshake's answer and the stream's first responses (what its source already holds) in
  /// one flush — one system call per new subscriber, not two.
  @Test func theHandshakesAnswerAndAStreamsFirstResponsesLeaveInOneFlush() throws {
    let feed = Feed()
    feed.queued.withLock { $0 = [MetadataEntry(key: "first").serializedBytes()] }
    let (channel, counter) = try Self.channel(feed: feed, handshakes: false)
    let opening = [ConnectionElement.preface(ConnectionPreface()), Self.frame(.handshake, 0, ClientHello(minVersion: 1, maxVersion: 1).serializedBytes())]
    for element in opening + Self.call(1, Self.pumped, value: "") { channel.pipeline.syncOperations.fireChannelRead(NIOAny(element)) }
    channel.pipeline.syncOperations.fireChannelReadComplete()
    channel.embeddedEventLoop.run()
    #expect(counter.flushes == 1)
    #expect(try channel.readOutbound(as: ConnectionElement.self) == .preface(ConnectionPreface()))
    let frames = try Self.readFrames(channel)
    #expect(frames.map(\.kind) == [.handshake, .message])
    #expect(try MetadataEntry(serializedBytes: Array(frames.last?.payload.dropFirst() ?? [])) == MetadataEntry(key: "first"))
  }

  /// Completions given on the loop in one job (a commit answering its publishes) leave in one
  /// flush, not one each.
  @Test func answersGivenTogetherOnTheLoopAreFlushedOnce() throws {
    let held = HeldCalls()
    let (channel, counter) = try Self.channel(held: held)
    for callID: UInt32 in 1...3 {
      for element in Self.call(callID, Self.later, value: "\(callID)") { try channel.writeInbound(element) }
    }
    channel.embeddedEventLoop.run()
    #expect(held.calls.withLock { $0.count } == 3)
    let flushesBefore = counter.flushes
    channel.embeddedEventLoop.execute { held.answerAll() }
    channel.embeddedEventLoop.run()
    #expect(counter.flushes == flushesBefore + 1)
    try Self.expectAnswersToCalls1To3(channel)
  }

  /// The frames written when `commit` runs on the loop of a connection that both streams
  /// (call 1, fed by a `Feed`) and waits for an answer (call 2, held): whether an update
  /// leaves before the answer to the publish that made it.
  static func framesAfterCommit(_ commit: @escaping @Sendable (Feed, HeldCalls) -> Void) throws -> [Frame] {
    let held = HeldCalls()
    let feed = Feed()
    let (channel, _) = try Self.channel(held: held, feed: feed)
    for element in Self.call(1, Self.pumped, value: "") + Self.call(2, Self.later, value: "2") { try channel.writeInbound(element) }
    channel.embeddedEventLoop.run()
    #expect(feed.pump.withLock { $0 } != nil)
    channel.embeddedEventLoop.execute { commit(feed, held) }
    channel.embeddedEventLoop.run()
    return try Self.readFrames(channel)
  }

  /// A commit on the loop wakes a subscriber's pull, then answers the publish: on a connection
  /// that does both, the update goes out before the answer to the publish that made it.
  @Test func anUpdateWokenBeforeAnAnswerOnTheLoopLeavesFirst() throws {
    let frames = try Self.framesAfterCommit { feed, held in
      feed.send(MetadataEntry(key: "update"))
      held.answerAll()
    }
    #expect(frames.map(\.callID) == [1, 2, 2])
    #expect(frames.map(\.kind) == [.message, .message, .status])
  }

  /// The broker answers a commit's publishes before it wakes the subscribers' pulls (so that
  /// a publisher's answers do not wait behind a thousand subscribers' writes): on a connection
  /// that does both, an update queued before the answer still leaves first.
  @Test func anUpdateQueuedBeforeAnAnswerLeavesFirstThoughItsPullIsWokenAfter() throws {
    let frames = try Self.framesAfterCommit { feed, held in
      feed.queued.withLock { $0.append(MetadataEntry(key: "update").serializedBytes()) }
      held.answerAll()
      feed.pump.withLock { $0 }?.wake()
    }
    #expect(frames.map(\.callID) == [1, 2, 2])
    #expect(frames.map(\.kind) == [.message, .message, .status])
  }

  /// An answer that comes after its call has ended (the client cancelled it) writes nothing,
  /// and the connection goes on serving.
  @Test func anAnswerAfterItsCallEndedWritesNothing() throws {
    let held = HeldCalls()
    let (channel, _) = try Self.channel(held: held)
    for element in Self.call(1, Self.later, value: "1") { try channel.writeInbound(element) }
    channel.embeddedEventLoop.run()
    try channel.writeInbound(Self.frame(.cancel, 1))
    channel.embeddedEventLoop.run()
    held.answerAll()
    channel.embeddedEventLoop.run()
    #expect(try Self.readFrames(channel).isEmpty)
    for element in Self.call(2, Self.echo, value: "2") { try channel.writeInbound(element) }
    channel.embeddedEventLoop.run()
    #expect(try Self.readFrames(channel).map(\.callID) == [2, 2])
  }

  /// A call half-closed without a request is refused with INVALID_ARGUMENT, its handler never
  /// runs, and the connection goes on.
  @Test func aCallWithoutARequestIsRefused() throws {
    let (channel, _) = try Self.channel()
    try channel.writeInbound(Self.frame(.callStart, 1, CallStart(method: Self.echo).serializedBytes()))
    try channel.writeInbound(Self.frame(.halfClose, 1))
    channel.embeddedEventLoop.run()
    let refused = try Self.readFrames(channel)
    #expect(refused.map(\.kind) == [.status])
    let status = try CallStatus(serializedBytes: try #require(refused.first).payload)
    #expect(status.code == StatusCode.invalidArgument.rawValue)
    #expect(status.message == "the method takes one request, got none")
    for element in Self.call(2, Self.echo, value: "2") { try channel.writeInbound(element) }
    channel.embeddedEventLoop.run()
    #expect(try Self.readFrames(channel).map(\.callID) == [2, 2])
  }

  /// A deflated request is held as it came until the call's half-close — the bytes the
  /// connection's budget counts, not what they inflate to — and inflated then: a valid one is
  /// answered, one that does not inflate ends its call only when its handler would run.
  @Test func aDeflatedRequestIsInflatedWhenItsHandlerRuns() throws {
    let (channel, _) = try Self.channel(compressions: [.deflate])
    var request = MetadataEntry(key: "k")
    request.value = String(repeating: "v", count: 2_000)
    try channel.writeInbound(Self.frame(.callStart, 1, CallStart(method: Self.echo).serializedBytes()))
    try channel.writeInbound(Self.frame(.message, 1, [1] + Deflate.compress(request.serializedBytes())))
    try channel.writeInbound(Self.frame(.callStart, 3, CallStart(method: Self.echo).serializedBytes()))
    try channel.writeInbound(Self.frame(.message, 3, [1, 0xDE, 0xAD, 0xBE, 0xEF]))
    channel.embeddedEventLoop.run()
    #expect(try Self.readFrames(channel).isEmpty)  // nothing inflated, nothing refused yet
    try channel.writeInbound(Self.frame(.halfClose, 3))
    channel.embeddedEventLoop.run()
    let refused = try Self.readFrames(channel)
    #expect(refused.map(\.kind) == [.status] && refused.map(\.callID) == [3])
    #expect(try CallStatus(serializedBytes: try #require(refused.first).payload).code == StatusCode.internal.rawValue)
    try channel.writeInbound(Self.frame(.halfClose, 1))
    channel.embeddedEventLoop.run()
    let answered = try Self.readFrames(channel)
    #expect(answered.map(\.kind) == [.message, .status] && answered.map(\.callID) == [1, 1])
    let response = try #require(answered.first).payload
    let inflated = response.first == 1 ? try Deflate.decompress(Array(response.dropFirst()), limit: 1 << 20) : Array(response.dropFirst())
    #expect(try MetadataEntry(serializedBytes: inflated) == request)
  }

  /// A peer that breaks the protocol and reads nothing does not keep its connection by not
  /// taking the GOAWAY: the connection closes once the GOAWAY has waited as long as a closing
  /// connection lingers.
  @Test func aPeerThatReadsNothingCannotHoldAClosingConnection() throws {
    let (channel, _) = try Self.channel()
    let held = HeldWrites()
    try channel.pipeline.syncOperations.addHandler(held, position: .first)
    channel.pipeline.fireErrorCaught(ProtocolViolation(.reservedBitSet, "a reserved bit"))
    #expect(held.count == 1)  // the GOAWAY, waiting
    channel.embeddedEventLoop.advanceTime(by: FlushCoalescer.lingering - .milliseconds(1))
    #expect(channel.isActive)
    channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
    #expect(!channel.isActive)
  }

  /// A peer that sends its preface and then only frames of a kind the handshake skips gets a
  /// GOAWAY UNAVAILABLE at the handshake deadline, and the connection closes; on a connection
  /// refused past the accept rate, the GOAWAY is the refusal's, with its retry-after hint.
  @Test(arguments: [nil, RPCError(code: .unavailable, message: "too many clients", retryAfterMillis: 1234)])
  func noHandshakeByTheDeadlineClosesTheConnection(refusal: RPCError?) throws {
    let channel = EmbeddedChannel()
    try channel.pipeline.syncOperations.addHandler(
      ServerConnectionHandler(
        router: RPCRouter(), configuration: .init(), gracePeriod: .seconds(10), handshakeTimeout: .seconds(10), refusal: refusal))
    try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 7400)).wait()
    try channel.writeInbound(ConnectionElement.preface(ConnectionPreface()))
    for _ in 0..<3 {
      channel.embeddedEventLoop.advanceTime(by: .seconds(3))
      try channel.writeInbound(ConnectionElement.frame(Frame(kind: FrameKind(rawValue: 0x7E), callID: 0, payload: [1])))
    }
    #expect(try channel.readOutbound(as: ConnectionElement.self) == nil)
    channel.embeddedEventLoop.advanceTime(by: .seconds(1))
    #expect(try channel.readOutbound(as: ConnectionElement.self) == .preface(ConnectionPreface()))
    let goAway = try GoAway(serializedBytes: try #require(Self.readFrames(channel).first { $0.kind == .goAway }).payload)
    #expect(goAway.code == StatusCode.unavailable.rawValue)
    #expect(goAway.retryAfterMillis == refusal?.retryAfterMillis)
    #expect(goAway.message == refusal?.message ?? "no handshake within 10000 ms")
    channel.embeddedEventLoop.advanceTime(by: FlushCoalescer.lingering)
    #expect(!channel.isActive)
  }

  /// A unary handler that ignores its cancellation does not hold the server's shutdown open:
  /// cancelled at the end of the grace period, it has a margin to return, then its connection
  /// closes regardless, and the server's registry empties.
  @Test(.timeLimit(.minutes(1))) func aHandlerIgnoringItsCancellationDoesNotHoldTheShutdownOpen() async throws {
    let gate = Gate()  // its waiters ignore cancellation
    let (channel, _) = try Self.channel(gate: gate)
    let registry = ConnectionRegistry(metrics: NOOPMetricsHandler.instance)
    registry.register(channel, isRefused: false)
    for element in Self.call(1, Self.gated, value: "1") { try channel.writeInbound(element) }
    channel.embeddedEventLoop.run()
    #expect(gate.waiting == 1)
    registry.shutDown(spreadOver: .zero, reconnectSpread: .zero)
    channel.embeddedEventLoop.run()  // the flush
    #expect(try Self.readFrames(channel).map(\.kind) == [.goAway])
    channel.embeddedEventLoop.advanceTime(by: .seconds(10))  // the grace period: cancelled, the handler waits on
    channel.embeddedEventLoop.advanceTime(by: ServerConnectionHandler.forcedCloseMargin - .milliseconds(1))
    #expect(channel.isActive)
    channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
    #expect(!channel.isActive)
    gate.open()  // the handler returns at last, to a closed connection
    channel.embeddedEventLoop.run()
    await registry.waitUntilEmpty()
  }

  /// A client that completed its handshake is not touched by the deadline.
  @Test func aHandshakeInTimeOutlivesTheDeadline() throws {
    let (channel, _) = try Self.channel(handshakeTimeout: .seconds(10))
    channel.embeddedEventLoop.advanceTime(by: .seconds(60))
    #expect(channel.isActive)
    #expect(try channel.readOutbound(as: ConnectionElement.self) == nil)
  }
}
