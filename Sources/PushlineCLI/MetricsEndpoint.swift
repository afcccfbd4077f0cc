import Logging
public import NIOCore
import NIOHTTP1
import NIOPosix
public import Prometheus
public import ServiceLifecycle
import Synchronization

/// The admin HTTP port as a `Service`: `GET /metrics` (or `HEAD`) answers with the registry's
/// metrics in the Prometheus text format; anything else gets 404, and bytes that are not
/// HTTP get 400. One request per connection. It serves until the group's graceful shutdown
/// or cancellation; with nothing to drain, both simply close the port. Public (with
/// ``bind(host:port:registry:limits:)``) for the benchmark's broker, which serves the same
/// figures.
///
/// The port shares the broker's descriptors, so it holds few connections and none for long
/// (``Limits``): a client that connects and sends nothing or trickles its request, or
/// thousands of them, cannot take the descriptors the broker's clients need.
public struct MetricsEndpoint: Service {
  /// How much of the process the port may hold.
  public struct Limits: Sendable {
    /// Connections open at once; one more is closed as soon as it is accepted.
    public var maxConnections: Int
    /// A connection is closed this long after it was accepted, answered or not: a scraper
    /// sends its request at once and reads a few kilobytes, while one that trickles its request
    /// a byte at a time (slowloris) would otherwise keep its place as long as it likes.
    public var timeout: TimeAmount

    /// 64 connections, each open at most 10 s: ample for scrapers.
    public init(maxConnections: Int = 64, timeout: TimeAmount = .seconds(10)) {
      self.maxConnections = maxConnections
      self.timeout = timeout
    }
  }

  var host: String
  /// The port; 0 picks a free one (logged on start).
  var port: Int
  var registry: PrometheusCollectorRegistry
  var logger: Logger

  /// Serves until the group's graceful shutdown or the task's cancellation, then closes the port.
  public func run() async throws {
    let channel = try await Self.bind(host: host, port: port, registry: registry)
    logger.info("metrics on http://\(host):\(channel.localAddress?.port ?? port)/metrics")
    try? await gracefulShutdown()
    try await channel.close()
  }

  /// Binds `host`:`port` and serves `registry` within `limits` until the returned channel is
  /// closed.
  public static func bind(
    host: String, port: Int, registry: PrometheusCollectorRegistry, limits: Limits = Limits()
  ) async throws -> any Channel {
    let open = OpenCount()
    return try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
      .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
      .childChannelInitializer { channel in
        guard open.count.add(1, ordering: .relaxed).newValue <= limits.maxConnections else {
          open.count.subtract(1, ordering: .relaxed)
          return channel.close()
        }
        let deadline = channel.eventLoop.scheduleTask(in: limits.timeout) { channel.close(promise: nil) }
        channel.closeFuture.whenComplete { _ in
          deadline.cancel()
          open.count.subtract(1, ordering: .relaxed)
        }
        return channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.configureHTTPServerPipeline()
          try channel.pipeline.syncOperations.addHandler(Handler(registry: registry))
        }
      }
      .bind(host: host, port: port).get()
  }

  /// The endpoint's connections open now.
  private final class OpenCount: Sendable {
    let count = Atomic(0)
  }

  /// Answers one HTTP request on its connection, then closes it; closes it too when it sends
  /// what is not HTTP (after NIO's 400).
  final class Handler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let registry: PrometheusCollectorRegistry
    private var request: (path: Substring, isHead: Bool)?

    init(registry: PrometheusCollectorRegistry) { self.registry = registry }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
      switch unwrapInboundIn(data) {
      case .head(let head):
        // The path without its query: a scraper may add one (`?x=1`) that means nothing here.
        let path = head.uri.prefix { $0 != "?" }
        request = head.method == .GET || head.method == .HEAD ? (path, head.method == .HEAD) : nil
      case .body: break
      case .end:
        let found = request?.path == "/metrics"
        let body = found ? registry.emitToBuffer() : Array("not found: try GET /metrics\n".utf8)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: found ? "text/plain; version=0.0.4" : "text/plain")
        headers.add(name: "Content-Length", value: "\(body.count)")
        headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: found ? .ok : .notFound, headers: headers))), promise: nil)
        if request?.isHead != true { context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil) }
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
      }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
      context.close(promise: nil)
    }
  }
}
