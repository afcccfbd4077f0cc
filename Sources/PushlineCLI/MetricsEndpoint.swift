import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus

/// The admin HTTP port: `GET /metrics` answers with the registry's metrics in the Prometheus
/// text format; anything else gets 404. One request per connection.
enum MetricsEndpoint {
  /// Binds `host`:`port` and serves `registry` until the returned channel is closed.
  static func bind(host: String, port: Int, registry: PrometheusCollectorRegistry) async throws -> any Channel {
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
