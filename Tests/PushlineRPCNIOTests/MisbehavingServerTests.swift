import NIOCore
import NIOEmbedded
import PushlineRPC
import PushlineSchema
import PushlineWire
import Testing

@testable import PushlineRPCNIO

/// A server that misbehaves — by bug or by design — costs the client no more memory than
/// PROTOCOL 2.7 allows, never makes a call look served that was not, and never leaves a caller
/// waiting past its cancellation.
@Suite("A client against a misbehaving server", .timeLimit(.minutes(1)))
struct MisbehavingServerTests {
  /// A client's connection handler on an EmbeddedChannel, past a handshake in which the server
  /// chose `compression`.
  static func connection(compression: Compression? = nil) throws -> (EmbeddedChannel, ClientConnectionHandler) {
    let channel = EmbeddedChannel()
    let ready = channel.eventLoop.makePromise(of: ClientConnectionStateMachine.Server.self)
    let handler = ClientConnectionHandler(configuration: .init(), ready: ready)
    try channel.pipeline.syncOperations.addHandler(handler)
    try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 7400)).wait()
    while try channel.readOutbound(as: ConnectionElement.self) != nil {}  // the preface and ClientHello
    var hello = ServerHello(version: 1)
    hello.compression = compression
    try channel.writeInbound(ConnectionElement.preface(ConnectionPreface()))
    try channel.writeInbound(ConnectionElement.frame(Frame(kind: .handshake, callID: 0, payload: hello.serializedBytes())))
    _ = try ready.futureResult.wait()
    return (channel, handler)
  }

  /// The frames the client wrote since last read, in order.
  static func written(_ channel: EmbeddedChannel) throws -> [Frame] {
    var frames: [Frame] = []
    while let element = try channel.readOutbound(as: ConnectionElement.self) { frames += element.frames }
    return frames
  }

  /// A stream's deflated responses are buffered as they came, and inflated as its consumer
  /// takes them: 32 of them, 4 MB each inflated and 4 KB on the wire, in one read burst, hold
  /// 128 KB until taken — inflated at once, they held 128 MB, past the 8 MiB a stream buffers.
  @Test func deflatedStreamResponsesAreHeldAsTheyCame() async throws {
    let (channel, handler) = try Self.connection(compression: .deflate)
    let handle = RPCConnection.CallHandle()
    let (stream, continuation) = AsyncThrowingStream<[ReceivedResponse], any Error>.makeStream()
    handler.startCall(handle, method: "/test.Stream/Big", request: [], timeout: nil, .stream(continuation, StreamCredit {}))
    let callID = try #require(handle.callID)
    _ = try Self.written(channel)
    var big = MetadataEntry(key: "k")
    big.value = String(repeating: "x", count: 4_000_000)
    let deflated = Deflate.compress(big.serializedBytes())
    for _ in 0..<32 { channel.pipeline.fireChannelRead(ConnectionElement.frame(Frame(kind: .message, callID: callID, payload: [1] + deflated))) }
    channel.pipeline.fireChannelReadComplete()
    var batches = stream.makeAsyncIterator()
    let batch = try #require(try await batches.next())
    #expect(batch.count == 32)
    #expect(batch.reduce(0) { $0 + $1.bytes.count } == 32 * deflated.count)
    #expect(deflated.count < 10_000)
    #expect(try MetadataEntry(serializedBytes: batch[0].message()) == big)
  }

  /// A unary call answered twice fails (INTERNAL) and is cancelled at the second answer: kept,
  /// a server's answers would pile up until its STATUS, if it ever came.
  @Test func aUnaryCallAnsweredTwiceFailsAndIsCancelled() async throws {
    let (cancelled, reportCancelled) = AsyncStream<UInt32>.makeStream()
    try await RawServer.run { port in
      try await RPCClient.withConnection(host: "127.0.0.1", port: port) { connection in
        await #expect(throws: RPCError(code: .internal, message: "a unary call answered with more than one response")) {
          try await connection.unary("/test.Echo/Echo", request: MetadataEntry(key: "k"), response: MetadataEntry.self)
        }
        var iterator = cancelled.makeAsyncIterator()
        #expect(await iterator.next() != nil)
      }
    } serve: { server in
      var callID: UInt32?
      while callID == nil {
        if case .frame(let frame) = try await server.next(), frame.kind == .callStart { callID = frame.callID }
      }
      let answer = Frame(kind: .message, callID: callID!, payload: [0] + MetadataEntry(key: "a").serializedBytes()).bytes
      try await server.send(
        ConnectionPreface().bytes + Frame(kind: .handshake, callID: 0, payload: ServerHello(version: 1).serializedBytes()).bytes + answer + answer)
      do {
        while true {
          if case .frame(let frame) = try await server.next(), frame.kind == .cancel { reportCancelled.yield(frame.callID) }
        }
      } catch {}  // until the client has gone
    }
  }

  /// A server that sends PINGs and reads nothing cannot make the client queue a PONG for each:
  /// while the client's writes wait to be sent, it answers none; once they go, it answers again.
  @Test func pingsFromAServerThatDoesNotReadAreNotAnswered() throws {
    let (channel, _) = try Self.connection()
    _ = try Self.written(channel)
    let ping = ConnectionElement.frame(Frame(kind: .ping, callID: 0, payload: [1, 2, 3, 4, 5, 6, 7, 8]))
    channel.isWritable = false
    channel.pipeline.fireChannelWritabilityChanged()
    for _ in 0..<1_000 { try channel.writeInbound(ping) }
    #expect(try Self.written(channel).isEmpty)
    channel.isWritable = true
    channel.pipeline.fireChannelWritabilityChanged()
    try channel.writeInbound(ping)
    #expect(try Self.written(channel).map(\.kind) == [.pong])
  }

  /// A server that refuses the handshake with a GOAWAY whose code is OK has still not served
  /// the calls started with it: they fail UNAVAILABLE, to be retried.
  @Test func aRefusalSayingOKIsStillARefusal() {
    var goAway = GoAway(lastCallID: 0)
    goAway.code = StatusCode.ok.rawValue
    #expect(ClientConnectionStateMachine.refusalStatus(of: goAway).code == StatusCode.unavailable.rawValue)
  }

  /// A server announcing no concurrent call, or frames below 16 KiB, is one the client cannot
  /// use — pipelined requests would wait for room forever, a request go in one-byte frames —
  /// and is let go as a server that broke the protocol, as a server lets such a client go.
  @Test(arguments: [(UInt32(16 << 10), UInt32(0)), (UInt32(1), UInt32(100))])
  func aServerWhoseLimitsLeaveNoRoomIsLetGo(maxFrameSize: UInt32, maxConcurrentCalls: UInt32) throws {
    var machine = ClientConnectionStateMachine(configuration: .init())
    _ = machine.start()
    var limits = Limits()
    (limits.maxFrameSize, limits.maxConcurrentCalls) = (maxFrameSize, maxConcurrentCalls)
    var hello = ServerHello(version: 1)
    hello.limits = limits
    _ = machine.received(.preface(ConnectionPreface()))
    let actions = machine.received(.frame(Frame(kind: .handshake, callID: 0, payload: hello.serializedBytes())))
    guard case .close(let elements)? = actions.last, case .frame(let frame)? = elements.last, frame.kind == .goAway else {
      Issue.record("expected a GOAWAY and a close, got \(actions)")
      return
    }
    #expect(try GoAway(serializedBytes: frame.payload).code == StatusCode.internal.rawValue)
    #expect(!actions.contains { if case .connectionReady = $0 { true } else { false } })
  }

  /// A pipelined call's `finish()` waits for the call's end no longer than its task's
  /// cancellation, against a server that never ends the call.
  @Test func aPipelinesFinishEndsAtItsCancellation() async throws {
    let ended = try await RawServer.cancelledWait(afterClientSends: .halfClose) { connection in
      try await connection.pipeline("/test.Pipe/Echo", request: MetadataEntry.self, response: MetadataEntry.self).finish()
    }
    #expect(throws: RPCError(code: .cancelled, message: "cancelled by the client")) { try ended.get() }
  }
}
