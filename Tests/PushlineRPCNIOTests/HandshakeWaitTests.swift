import NIOCore
import NIOEmbedded
import PushlineRPC
import PushlineSchema
import PushlineWire
import Testing

@testable import PushlineRPCNIO

/// A server that never answers the handshake holds a client neither past its cancellation nor
/// past its keepalive timeout — even one that keeps the connection from going quiet with
/// frames of unknown kinds; nor does one that never answers a PING.
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

  /// `pushline ping --timeout` against a server that answered its handshake and then stalled:
  /// the PING's wait ends at its cancellation, not at the keepalive timeout.
  @Test(.timeLimit(.minutes(1))) func aPingNeverAnsweredEndsAtItsCancellation() async throws {
    let ended = try await RawServer.cancelledWait(afterClientSends: .ping) { try await $0.ping() }
    #expect(throws: CancellationError.self) { try ended.get() }
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
