import NIOCore
import NIOPosix
import PushlineRPC
@testable import PushlineRPCNIO

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
    do {
      try await listener.executeThenClose { connections in
        var accepted = connections.makeAsyncIterator()
        guard let connection = try await accepted.next() else { throw RPCError(code: .internal, message: "no connection") }
        try await connection.executeThenClose { inbound, outbound in
          var server = RawServer(inbound: inbound.makeAsyncIterator(), outbound: outbound)
          try await serve(&server)
        }
      }
    } catch {
      client.cancel()
      throw error
    }
    try await client.value
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
