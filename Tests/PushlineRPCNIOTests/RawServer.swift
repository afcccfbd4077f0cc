import NIOCore
import NIOPosix
import PushlineRPC
@testable import PushlineRPCNIO
import PushlineSchema
import PushlineWire
import Synchronization
import Testing

/// A server that speaks raw frames to one client, for tests that decide exactly when a
/// server's handshake or answers reach the client.
struct RawServer {
  private var inbound: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
  private let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
  private var decoder = FrameDecoder(maxPayloadLength: FrameHeader.maxPayloadLength)
  private var received = ByteBuffer()

  /// Listens on a loopback port, passes it to `connect` (which connects the client under test
  /// and runs it) while `serve` talks to the first connection accepted; returns once both are
  /// done.
  static func run(
    connect: @escaping @Sendable (_ port: Int) async throws -> Void, serve: (inout RawServer) async throws -> Void
  ) async throws {
    let listener = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
      .bind(host: "127.0.0.1", port: 0) { channel in
        channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
      }
    let client = Task { try await connect(listener.channel.localAddress!.port!) }
    // A test past its time limit is cancelled: so is the client under test, which may be the
    // one waiting (on a regression), rather than leave the test to hang.
    do {
      try await withTaskCancellationHandler {
        try await listener.executeThenClose { connections in
          var accepted = connections.makeAsyncIterator()
          guard let connection = try await accepted.next() else { throw RPCError(code: .internal, message: "no connection") }
          try await connection.executeThenClose { inbound, outbound in
            var server = RawServer(inbound: inbound.makeAsyncIterator(), outbound: outbound)
            try await serve(&server)
          }
        }
      } onCancel: {
        client.cancel()
      }
    } catch {
      client.cancel()
      throw error
    }
    try await client.value
  }

  /// Runs `wait` on a connection to a server that answers the handshake and then nothing,
  /// cancels it once the server has read a frame of `kind` from the client, and returns how
  /// the wait ended: what a stalled server does to a waiting caller.
  static func cancelledWait(
    afterClientSends kind: FrameKind, _ wait: @escaping @Sendable (RPCConnection) async throws -> Void
  ) async throws -> Result<Void, any Error> {
    let (seen, reportSeen) = AsyncStream<Void>.makeStream()
    let outcome = Mutex<Result<Void, any Error>?>(nil)
    try await run { port in
      let keepalive = RPCClient.Keepalive(interval: .seconds(600), timeout: .seconds(600))
      try await RPCClient.withConnection(host: "127.0.0.1", port: port, keepalive: keepalive) { connection in
        _ = try await connection.handshake()
        let waiting = Task { try await wait(connection) }
        var iterator = seen.makeAsyncIterator()
        await iterator.next()
        waiting.cancel()
        let result = await waiting.result
        outcome.withLock { $0 = result }
      }
    } serve: { server in
      try await server.send(ConnectionPreface().bytes + Frame(kind: .handshake, callID: 0, payload: ServerHello(version: 1).serializedBytes()).bytes)
      do {
        while true {
          if case .frame(let frame) = try await server.next(), frame.kind == kind { reportSeen.yield() }
        }
      } catch {}  // until the client has gone
    }
    return try #require(outcome.withLock { $0 })
  }

  private init(inbound: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator, outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>) {
    self.inbound = inbound
    self.outbound = outbound
  }

  /// The client's next preface or frame; throws once the client has closed.
  mutating func next() async throws -> ConnectionElement {
    while true {
      if let element = try decoder.decodeElement(from: &received) { return element }
      guard let chunk = try await inbound.next() else { throw RPCError(code: .unavailable, message: "the client closed") }
      received.writeImmutableBuffer(chunk)
    }
  }

  /// Sends `bytes` to the client.
  func send(_ bytes: [UInt8]) async throws {
    try await outbound.write(ByteBuffer(bytes: bytes))
  }
}
