import Logging
public import NIOCore
import NIOHTTP1
import NIOPosix
public import Prometheus
public import ServiceLifecycle

/// The admin HTTP port as a `Service`: `GET /metrics` answers with the registry's metrics in
/// the Prometheus text format; anything else gets 404. One request per connection. It serves
/// until the group's graceful shutdown or cancellation; with nothing to drain, both simply
/// close the port. Public (with ``bind(host:port:registry:)``) for the benchmark's broker, which
/// serves the same figures.
public struct MetricsEndpoint: Service {
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

  /// Binds `host`:`port` and serves `registry` until the returned channel is closed.
  public static func bind(host: String, port: Int, registry: PrometheusCollectorRegistry) async throws -> any Channel {
    try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
      .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
      .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.configureHTTPServerPipeline()
          try channel.pipeline.syncOperations.addHandler(Handler(registry: registry))
        }
      }
      .bind(host: host, port: port).get()
  }

  /// Answers one HTTP request on its connection, then closes it.
  final class Handler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let registry: PrometheusCollectorRegistry
    private var uri: String?

    init(registry: PrometheusCollectorRegistry) { self.registry = registry }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
      switch unwrapInboundIn(data) {
      case .head(let head): uri = head.method == .GET ? head.uri : nil
      case .body: break
      case .end:
        let found = uri == "/metrics"
        let body = found ? registry.emitToBuffer() : Array("not found: try GET /metrics\n".utf8)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: found ? "text/plain; version=0.0.4" : "text/plain")
        headers.add(name: "Content-Length", value: "\(body.count)")
        headers.add(name: "Connection", value: "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: found ? .ok : .notFound, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
      }
    }
  }
}
