public import CoreMetrics
public import Logging
public import NIOCore
import NIOPosix
public import PushlineRPC
import Synchronization

/// A Pushline RPC server on TCP: it accepts connections and serves each with the methods of
/// its ``RPCRouter``, following ``ServerConnectionStateMachine``.
///
/// Each connection is served on its event loop by a channel handler that drives the state
/// machine, writes without flushing each frame and flushes once per burst; each call's handler
/// runs in a task of its own (so that the call can be cancelled alone) that prefers the
/// connection's event loop as its executor, so responses are written without a hop (see
/// `ServerConnectionHandler`). Handlers therefore start on the event loop: one that computes
/// for long should move that work elsewhere. A response written from another executor (an
/// actor's, say) is correct too, but costs a hop to the loop per message. A connection that breaks the protocol gets a
/// GOAWAY naming the violation and is closed; every other connection keeps being served.
public struct RPCServer: Sendable {
  /// Where to listen and how each connection behaves.
  public struct Configuration: Sendable {
    /// The address to bind; loopback by default, so nothing is exposed by accident.
    public var host: String
    /// The port; 0 picks a free one (see ``withRunningServer(_:)``).
    public var port: Int
    /// The protocol settings of every connection: limits, compressions, keepalive, ping budget.
    public var connection: ServerConnectionStateMachine.Configuration
    /// A connection on which the client sends nothing for this long (up to twice as long; see
    /// `IdleConnectionHandler`) is closed with a GOAWAY: dead clients, and peers that send half
    /// a frame and stop. Longer than the keepalive interval announced to clients, so that a
    /// live client's pings always arrive in time.
    public var idleTimeout: Duration
    /// How long a new connection has for its preface and handshake before a GOAWAY closes it
    /// (a refused connection's says when to come back), however much else the peer sends.
    public var handshakeTimeout: Duration
    /// On shutdown, how long calls in progress may still run after their connection's GOAWAY
    /// before they are cancelled.
    public var gracePeriod: Duration
    /// On shutdown, the GOAWAYs go out one connection at a time, spread evenly over this
    /// period (the lame-duck phase), so that clients do not all reconnect in the same instant;
    /// the server keeps serving each connection until its turn. Zero sends them all at once.
    public var lameDuckPeriod: Duration
    /// On shutdown, each connection's GOAWAY tells its client to come back after a hint drawn
    /// at random from zero to this, so that clients do not all reconnect — here after a
    /// restart — in the same instant: the lame-duck period spreads when they learn of the
    /// shutdown, this when they return. The broker's streams end with hints from its own
    /// spread (`BrokerConfiguration.reconnectSpread`), which a broker's server should share.
    public var reconnectSpread: Duration
    /// New connections accepted per second on average, in bursts of as many; past that, a
    /// connection's handshake is answered with GOAWAY UNAVAILABLE and a retry-after hint that
    /// grows with the backlog (`AdmissionLimiter`), so a reconnect storm spreads itself out over
    /// the time the server needs to accept it. 0 accepts every connection.
    public var maxConnectionsPerSecond: Int
    /// Where the server reports its connections (`pushline_connections`,
    /// `pushline_connections_accepted_total`, `pushline_connections_refused_total`);
    /// swift-metrics' global factory by default.
    public var metrics: any MetricsFactory
    /// Where the server logs what operators should know: where it listens, its shutdown, and
    /// each connection it closes for breaking the protocol (at `notice`) or for other reasons
    /// (at `debug`, as a reconnect storm's refusals are many).
    public var logger: Logger

    /// A configuration listening on `host`:`port`.
    public init(
      host: String = "127.0.0.1", port: Int = 7400, connection: ServerConnectionStateMachine.Configuration = .init(),
      idleTimeout: Duration = .seconds(75), handshakeTimeout: Duration = .seconds(10), gracePeriod: Duration = .seconds(10),
      lameDuckPeriod: Duration = .zero, reconnectSpread: Duration = .seconds(5), maxConnectionsPerSecond: Int = 0, metrics: any MetricsFactory = MetricsSystem.factory,
      logger: Logger = Logger(label: "pushline.rpc")
    ) {
      self.host = host
      self.port = port
      self.connection = connection
      self.idleTimeout = idleTimeout
      self.handshakeTimeout = handshakeTimeout
      self.gracePeriod = gracePeriod
      self.lameDuckPeriod = lameDuckPeriod
      self.reconnectSpread = reconnectSpread
      self.maxConnectionsPerSecond = maxConnectionsPerSecond
      self.metrics = metrics
      self.logger = logger
    }
  }

  private let router: RPCRouter
  private let configuration: Configuration

  /// A server for `router`'s methods plus `/pushline.Health/Check`.
  public init(router: RPCRouter, configuration: Configuration = Configuration()) {
    var router = router
    HealthService.register(in: &router)
    self.router = router
    self.configuration = configuration
  }

  /// Binds, runs `body` with the bound address while serving, then shuts down gracefully:
  /// no new connections, a GOAWAY on every connection (spread over the lame-duck period, each
  /// with a retry-after hint drawn from the reconnect spread), calls in progress get the grace
  /// period from their connection's GOAWAY to finish, then everything still running is
  /// cancelled.
  ///
  /// If `body` throws, the server stops at once, without the grace period, and rethrows its
  /// error. If the task is cancelled while `body` runs (and `body` returns) or during the
  /// shutdown, the server closes every connection still open at once, with no GOAWAY still to
  /// go, and throws `CancellationError` when that cut any short; a server that had no
  /// connection left to close returns as from a graceful shutdown.
  public func withRunningServer<Result: Sendable>(_ body: (SocketAddress) async throws -> Result) async throws -> Result {
    let connections = ConnectionRegistry(metrics: configuration.metrics)
    let listener = try await bind(registeringIn: connections)
    configuration.logger.info("listening", metadata: ["address": "\(listener.localAddress.map { "\($0)" } ?? "?")"])
    let result: Result
    do {
      result = try await body(listener.localAddress!)
    } catch {
      try? await listener.close()
      connections.closeAll()
      await connections.waitUntilEmpty()
      throw error
    }
    try? await listener.close()
    // Cancelled while `body` ran, which returned all the same: no GOAWAYs, every connection
    // closes at once (below, as the cancellation handler runs straight away).
    if !Task.isCancelled {
      configuration.logger.info(
        "shutting down: a GOAWAY to each connection", metadata: ["lameDuckPeriod": "\(configuration.lameDuckPeriod)"])
      connections.shutDown(spreadOver: configuration.lameDuckPeriod, reconnectSpread: configuration.reconnectSpread)
    }
    let cutShort = Atomic(false)
    await withTaskCancellationHandler {
      await connections.waitUntilEmpty()
    } onCancel: {
      connections.closeAll { open in if open > 0 { cutShort.store(true, ordering: .sequentiallyConsistent) } }
    }
    if cutShort.load(ordering: .sequentiallyConsistent) { throw CancellationError() }
    return result
  }

  /// Listens; each accepted connection is set up and registered on its own event loop, and
  /// served there by its handler, with no task of its own.
  private func bind(registeringIn registry: ConnectionRegistry) async throws -> any Channel {
    let (router, configuration) = (router, configuration)
    let admission = AdmissionLimiter(
      ratePerSecond: Double(configuration.maxConnectionsPerSecond), burst: configuration.maxConnectionsPerSecond,
      refusal: "too many clients are connecting; retry later", nowMillis: WallClock.systemMillis())
    let refused = Counter(label: "pushline_connections_refused_total", factory: configuration.metrics)
    let group = MultiThreadedEventLoopGroup.singleton
    // One pump scheduler per event loop, shared by its connections: a fan-out waking many
    // streams costs each loop one job.
    let pumps = Dictionary(uniqueKeysWithValues: group.makeIterator().map { (ObjectIdentifier($0), PumpScheduler.pumps(on: $0)) })
    let violationLog = LogBudget()
    return try await ServerBootstrap(group: group)
      .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
      .serverChannelOption(.backlog, value: 256)
      .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
      // A peer's end of file is an event, not a close: the calls it sent before it are answered.
      .childChannelOption(.allowRemoteHalfClosure, value: true)
      .childChannelOption(.maxMessagesPerRead, value: ConnectionReads.maxMessagesPerRead)
      .childChannelOption(.recvAllocator, value: ConnectionReads.receiveBuffers)
      .childChannelInitializer { channel in
        var refusal: RPCError?
        do throws(RPCError) { try admission.admit(nowMillis: WallClock.systemMillis()) } catch {
          refusal = error
          refused.increment()
        }
        return channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.addHandlers(
            Self.connectionHandlers(
              router: router, configuration: configuration, refusal: refusal, pumps: pumps[ObjectIdentifier(channel.eventLoop)],
              violationLog: violationLog))
          registry.register(channel, isRefused: refusal != nil)
        }
      }
      .bind(host: configuration.host, port: configuration.port)
      .get()
  }

  /// The pipeline of an accepted connection, from the socket up; `violationLog` is the
  /// server's allowance of lines about connections that broke the protocol.
  static func connectionHandlers(
    router: RPCRouter, configuration: Configuration, refusal: RPCError?, pumps: PumpScheduler?,
    violationLog: LogBudget
  ) -> [any ChannelHandler] {
    [
      // No reading while the peer does not read what it is sent: what a connection's
      // requests make the server write stays bounded by a read's worth.
      BackPressureHandler(),
      FrameDecodingHandler(maxPayloadLength: configuration.connection.limits.maxFrameSize),
      FrameEncodingHandler(),
      IdleConnectionHandler(readTimeout: TimeAmount(configuration.idleTimeout)),
      ServerConnectionHandler(
        router: router, configuration: configuration.connection, gracePeriod: TimeAmount(configuration.gracePeriod),
        handshakeTimeout: TimeAmount(configuration.handshakeTimeout), refusal: refusal, pumps: pumps,
        logger: configuration.logger, violationLog: violationLog),
    ]
  }
}
