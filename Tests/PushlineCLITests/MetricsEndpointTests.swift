import NIOCore
import NIOPosix
import Prometheus
import PushlineBroker
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import Testing

@testable import PushlineCLI

/// The admin port as `pushline serve --metrics-port` runs it, scraped over a real socket: one
/// Prometheus registry behind the broker's and the RPC server's metrics, as `serve` bootstraps
/// it, here injected instead of made global.
@Suite("The metrics endpoint")
struct MetricsEndpointTests {
  /// The broker's figures that the README promises, after one subscription and one publish.
  @Test func aScrapeAfterASubscriptionAndAPublishShowsTheBrokersFigures() async throws {
    let registry = PrometheusCollectorRegistry()
    let factory = PrometheusMetricsFactory(registry: registry)
    let brokerHost = BrokerHost(
      storage: InMemoryBrokerStorage(), configuration: BrokerConfiguration(metrics: BrokerMetrics(factory: factory)),
      secret: Array("0123456789abcdef0123456789abcdef".utf8), host: "127.0.0.1", port: 0, connectionMetrics: factory)
    let endpoint = try await MetricsEndpoint.bind(host: "127.0.0.1", port: 0, registry: registry)
    let metricsPort = try #require(endpoint.localAddress?.port)
    let scrape = try await brokerHost.run { running in
      var configuration = ClientConnectionStateMachine.Configuration()
      configuration.authToken = try await running.authority.mint(
        subject: "test", role: .admin, topics: ["driver/1"], expiresAtMillis: WallClock.systemMillis() + 3_600_000)
      return try await RPCClient.withConnection(host: "127.0.0.1", port: running.address.port!, configuration: configuration) {
        connection in
        var updates = connection.serverStreaming(
          BrokerService.subscribeMethod, request: SubscribeRequest(topics: [TopicPosition(topic: "driver/1")]),
          response: TopicUpdate.self
        ).makeAsyncIterator()
        _ = try #require(try await updates.next())  // the (empty) snapshot: the subscription is live
        let card = TrackerCard(cardID: "earnings/today", priority: 1, isValid: true)
        let request = PublishRequest(topic: "driver/1", changes: [CardChange(upserting: card)])
        _ = try await connection.unary(BrokerService.publishMethod, request: request, response: PublishResponse.self)
        let update = try #require(try await updates.next())
        #expect(update.changes.map(\.cardID) == ["earnings/today"])
        return try await Self.get("/metrics", port: metricsPort)
      }
    }
    try await endpoint.close()

    #expect(scrape.status == "HTTP/1.1 200 OK")
    let values = Self.samples(in: scrape.body)
    #expect(values["pushline_connections"] == 1)
    #expect(values["pushline_connections_accepted_total"] == 1)
    #expect(values["pushline_connections_refused_total"] == 0)
    #expect(values["pushline_subscriptions"] == 1)
    #expect(values["pushline_publishes_total"] == 1)
    #expect(values["pushline_published_changes_total"] == 1)
    #expect(values["pushline_delivered_changes_total"] == 1)
    #expect(values["pushline_coalesced_changes_total"] == 0)
    #expect(values["pushline_failed_commits_total"] == 0)
    #expect(values["pushline_queued_changes"] != nil && values["pushline_longest_queue_changes"] != nil)
    #expect(values["pushline_commit_duration_seconds_count"] == 1)
    #expect(values["pushline_commit_publishes_count"] == 1)
  }

  /// Only `GET /metrics` is served: another path, or another method, gets 404.
  @Test func anythingButGetMetricsIsNotFound() async throws {
    let endpoint = try await MetricsEndpoint.bind(host: "127.0.0.1", port: 0, registry: PrometheusCollectorRegistry())
    let port = try #require(endpoint.localAddress?.port)
    let other = try await Self.get("/health", port: port)
    let post = try await Self.get("/metrics", method: "POST", port: port)
    try await endpoint.close()
    #expect(other.status == "HTTP/1.1 404 Not Found" && other.body == "not found: try GET /metrics\n")
    #expect(post.status == "HTTP/1.1 404 Not Found")
  }

  /// A scraper's query means nothing here, and `HEAD` gets `GET`'s head without the body.
  @Test func aQueryIsIgnoredAndHeadGetsTheHeadAlone() async throws {
    let registry = PrometheusCollectorRegistry()
    registry.makeCounter(descriptor: .init(namespace: "pushline", metricName: "test", unitName: "total", helpText: "")).increment()
    let endpoint = try await MetricsEndpoint.bind(host: "127.0.0.1", port: 0, registry: registry)
    let port = try #require(endpoint.localAddress?.port)
    let queried = try await Self.get("/metrics?x=1", port: port)
    let head = try await Self.get("/metrics", method: "HEAD", port: port)
    try await endpoint.close()
    #expect(queried.status == "HTTP/1.1 200 OK" && Self.samples(in: queried.body)["pushline_test_total"] == 1)
    #expect(head.status == "HTTP/1.1 200 OK" && head.body.isEmpty)
  }

  /// The port shares the broker's descriptors: a connection that sends nothing is closed at
  /// the timeout, one that sends what is not HTTP gets 400 and is closed, and one past the
  /// limit is closed as soon as it is accepted, while the one within it is served.
  @Test(.timeLimit(.minutes(1))) func connectionsAreFewAndShortLived() async throws {
    let endpoint = try await MetricsEndpoint.bind(
      host: "127.0.0.1", port: 0, registry: PrometheusCollectorRegistry(), limits: .init(maxConnections: 1, timeout: .seconds(60)))
    let port = try #require(endpoint.localAddress?.port)
    // Of two connections that send nothing, the one accepted second is closed at once; the
    // other is answered once it asks (the endpoint closes it after its response).
    let bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
    let connections = [try await bootstrap.connect(host: "127.0.0.1", port: port).get(), try await bootstrap.connect(host: "127.0.0.1", port: port).get()]
    let (closed, reportClosed) = AsyncStream.makeStream(of: Int.self)
    for (index, connection) in connections.enumerated() { connection.closeFuture.whenComplete { _ in reportClosed.yield(index) } }
    var closings = closed.makeAsyncIterator()
    let refused = try #require(await closings.next())
    try await connections[1 - refused].writeAndFlush(ByteBuffer(string: Self.request("GET", "/metrics")))
    #expect(await closings.next() == 1 - refused)
    try await endpoint.close()

    let idle = try await MetricsEndpoint.bind(
      host: "127.0.0.1", port: 0, registry: PrometheusCollectorRegistry(), limits: .init(timeout: .milliseconds(100)))
    let idlePort = try #require(idle.localAddress?.port)
    #expect(try await Self.readToTheEnd(try await Self.connect(port: idlePort)).isEmpty)
    try await idle.close()

    // The default limits: a loaded machine sending the garbage late meets no timeout.
    let plain = try await MetricsEndpoint.bind(host: "127.0.0.1", port: 0, registry: PrometheusCollectorRegistry())
    let garbage = try await Self.connect(port: try #require(plain.localAddress?.port))
    let answer = try await garbage.executeThenClose { inbound, outbound in
      try await outbound.write(ByteBuffer(string: "\u{0}\u{1}not http at all\r\n\r\n"))
      var response = ByteBuffer()
      for try await var part in inbound { response.writeBuffer(&part) }
      return String(buffer: response)
    }
    try await plain.close()
    #expect(answer.hasPrefix("HTTP/1.1 400 Bad Request"))
  }

  /// A connection that trickles its request, a header byte at a time (slowloris), is closed at
  /// the timeout all the same: it cannot hold its place, and keep the scrapers out, for good
  /// (the time limit fails the test if it is never closed).
  @Test(.timeLimit(.minutes(1))) func aRequestTrickledByteByByteIsCutOffAtTheTimeout() async throws {
    let endpoint = try await MetricsEndpoint.bind(
      host: "127.0.0.1", port: 0, registry: PrometheusCollectorRegistry(), limits: .init(maxConnections: 1, timeout: .milliseconds(500)))
    let port = try #require(endpoint.localAddress?.port)
    let slow = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port).get()
    // On a loaded machine the deadline may pass before this first write: it may fail too.
    try? await slow.writeAndFlush(ByteBuffer(string: "GET /metrics HTTP/1.1\r\nX-Slow: "))
    // Paced, not synchronised: a byte every 50 ms, until the endpoint closes the connection.
    while slow.isActive {
      try? await slow.writeAndFlush(ByteBuffer(string: "a"))
      try await Task.sleep(for: .milliseconds(50))
    }
    try await endpoint.close()
  }

  static func request(_ method: String, _ path: String) -> String {
    "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n"
  }

  static func connect(port: Int) async throws -> NIOAsyncChannel<ByteBuffer, ByteBuffer> {
    try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port) { channel in
      channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
    }
  }

  /// What `channel` receives until the endpoint closes it, sending nothing.
  static func readToTheEnd(_ channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>) async throws -> String {
    try await channel.executeThenClose { inbound, _ in
      var response = ByteBuffer()
      for try await var part in inbound { response.writeBuffer(&part) }
      return String(buffer: response)
    }
  }

  /// Sends one hand-written HTTP/1.1 request to `port` on loopback and reads the response to
  /// the end of the connection, which the endpoint closes after answering.
  static func get(_ path: String, method: String = "GET", port: Int) async throws -> (status: String, body: String) {
    let channel = try await connect(port: port)
    let response = try await channel.executeThenClose { inbound, outbound in
      try await outbound.write(ByteBuffer(string: request(method, path)))
      var response = ByteBuffer()
      for try await var part in inbound { response.writeBuffer(&part) }
      return String(buffer: response)
    }
    let head = try #require(response.firstRange(of: "\r\n\r\n"), "no end of the head in \(response)")
    let status = String(response[..<head.lowerBound].prefix { $0 != "\r\n" })  // one Character
    return (status, String(response[head.upperBound...]))
  }

  /// The value of each unlabelled sample of a Prometheus text exposition, by metric name.
  static func samples(in text: String) -> [String: Double] {
    var values: [String: Double] = [:]
    for line in text.split(separator: "\n") where !line.hasPrefix("#") {
      let fields = line.split(separator: " ")
      if fields.count == 2, !fields[0].contains("{"), let value = Double(fields[1]) { values[String(fields[0])] = value }
    }
    return values
  }
}
