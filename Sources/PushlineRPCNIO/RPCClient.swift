import NIOCore
import NIOPosix
public import PushlineRPC

/// A Pushline RPC client on TCP: one connection, many concurrent calls.
///
/// ```swift
/// try await RPCClient.withConnection(host: "127.0.0.1", port: 7400) { connection in
///   let health = try await connection.unary(
///     HealthService.checkMethod, request: HealthCheckRequest(), response: HealthCheckResponse.self)
/// }
/// ```
public enum RPCClient {
  /// How the client keeps a quiet connection alive and notices a dead server.
  public struct Keepalive: Sendable {
    /// Send a PING when nothing has been sent for this long: a quiet connection's PING goes out
    /// at most this long after its last write. Once the handshake is done, a server that
    /// announces a shorter keepalive interval in its `ServerHello` is kept to instead — but not
    /// below 1 s: a server announcing less is pinged every second, so that it cannot make the
    /// client flood it. An interval under half the server's announced one is raised to half of
    /// it: PINGs closer than that count against the server's ping budget (docs/PROTOCOL.md 2.5),
    /// and ten in a row with no call activity would have the server close the connection.
    public var interval: Duration
    /// Declare the server dead (GOAWAY, close, calls end UNAVAILABLE) when nothing has been
    /// received for this long (up to twice as long; see `IdleConnectionHandler`), or when it
    /// has not answered the handshake within it. Pings are
    /// answered, so a live server is never quiet this long: a server whose announced keepalive
    /// interval spaces the PINGs more than half this apart lengthens it to two intervals.
    public var timeout: Duration

    /// Pings after 20 s of quiet (or the server's shorter interval); a server silent for 60 s
    /// is dead.
    public init(interval: Duration = .seconds(20), timeout: Duration = .seconds(60)) {
      self.interval = interval
      self.timeout = timeout
    }
  }

  /// Connects, runs `body` with the connection, then closes it.
  ///
  /// `body` runs once the TCP connection is up, without waiting for the server's handshake: its
  /// first calls go out with the `ClientHello`, so that connecting and subscribing costs one round
  /// trip — what a reconnect storm of thousands of clients pays for.
  ///
  /// Connecting gives up after 10 s, or after the keepalive timeout when that is shorter: a task
  /// cancelled meanwhile waits for it (a connection attempt cannot be cancelled).
  ///
  /// - Throws: ``RPCError`` with UNAVAILABLE when the server cannot be reached or refuses the
  ///   handshake (the GOAWAY's reason and retry-after hint in it; the calls `body` started
  ///   meanwhile fail with it too), and whatever `body` throws.
  public static func withConnection<Result: Sendable>(
    host: String, port: Int, configuration: ClientConnectionStateMachine.Configuration = .init(),
    keepalive: Keepalive = Keepalive(), _ body: (RPCConnection) async throws -> Result
  ) async throws -> Result {
    let connection: RPCConnection
    do {
      connection = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .connectTimeout(TimeAmount(min(keepalive.timeout, .seconds(10))))
        .channelOption(.tcpOption(.tcp_nodelay), value: 1)
        .channelOption(.maxMessagesPerRead, value: ConnectionReads.maxMessagesPerRead)
        .channelOption(.recvAllocator, value: ConnectionReads.receiveBuffers)
        .connect(host: host, port: port) { channel in
          channel.eventLoop.makeCompletedFuture {
            let handler = ClientConnectionHandler(
              configuration: configuration, ready: channel.eventLoop.makePromise(), handshakeTimeout: TimeAmount(keepalive.timeout))
            try channel.pipeline.syncOperations.addHandlers([
              FrameDecodingHandler(maxPayloadLength: configuration.limits.maxFrameSize),
              FrameEncodingHandler(),
              IdleConnectionHandler(readTimeout: TimeAmount(keepalive.timeout), pingInterval: TimeAmount(keepalive.interval)),
              handler,
            ])
            return RPCConnection(channel: channel, handler: NIOLoopBound(handler, eventLoop: channel.eventLoop))
          }
        }
    } catch {
      throw RPCError(code: .unavailable, message: "cannot connect to \(host):\(port): \(error)")
    }
    do {
      let result = try await body(connection)
      _ = try await connection.handshake()  // a refused handshake throws, even when `body` made no call
      await connection.close()
      return result
    } catch {
      await connection.close()
      throw error
    }
  }
}
