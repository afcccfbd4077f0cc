import NIOCore
import NIOEmbedded
import PushlineRPC
import Testing

@testable import PushlineRPCNIO

/// A server that never answers the handshake holds a client neither past its cancellation nor
/// past its keepalive timeout — even one that keeps the connection from going quiet with
/// frames of unknown kinds.
@Suite("Waiting for the handshake")
struct HandshakeWaitTests {
  /// `pushline watch` told to stop (SIGTERM) while its server has not answered stops at once.
  @Test(.timeLimit(.minutes(1))) func aCancelledWaitEndsAtOnce() async throws {
    let (waiting, reportWaiting) = AsyncStream<Void>.makeStream()
    try await RawServer.run { port in
      let client = Task {
        try await RPCClient.withConnection(
          host: "127.0.0.1", port: port, keepalive: RPCClient.Keepalive(interval: .seconds(600), timeout: .seconds(600))
        ) { connection in
          reportWaiting.yield()
          try await connection.handshake()
        }
      }
      var iterator = waiting.makeAsyncIterator()
      await iterator.next()
      client.cancel()
      await #expect(throws: CancellationError.self) { try await client.value }
    } serve: { server in
      do {
        while true { _ = try await server.next() }  // never answers, until the client has gone
      } catch {}
    }
  }

  /// A server that sends no handshake within the timeout is let go: the wait fails UNAVAILABLE,
  /// saying so, and the connection closes.
  @Test func noHandshakeWithinTheTimeoutClosesTheConnection() throws {
    let channel = EmbeddedChannel()
    let ready = channel.eventLoop.makePromise(of: ClientConnectionStateMachine.Server.self)
    try channel.pipeline.syncOperations.addHandler(
      ClientConnectionHandler(configuration: .init(), ready: ready, handshakeTimeout: .seconds(5)))
    try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 7400)).wait()
    channel.embeddedEventLoop.advanceTime(by: .seconds(4))
    #expect(channel.isActive)
    channel.embeddedEventLoop.advanceTime(by: .seconds(1))
    #expect(!channel.isActive)
    #expect(throws: RPCError(code: .unavailable, message: "the server did not answer the handshake within 5 s")) {
      try ready.futureResult.wait()
    }
  }
}
