import MetricsTestKit
import NIOCore
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import Synchronization
import Testing

/// What keeps a restart or a network blip from bringing every client back in the same instant:
/// the accept rate, and the lame-duck period that spreads the shutdown's GOAWAYs.
@Suite("Reconnect storms over loopback TCP")
struct ReconnectStormTests {
  static let method = "/test.Forever/Follow"

  /// When the streams heard that their connections were going away.
  final class Instants: Sendable {
    let noted = Mutex<[ContinuousClock.Instant]>([])
  }

  /// A stream that never ends by itself: it ends when its connection goes away, and notes when.
  final class Follower: ResponseSource {
    private let instants: Instants
    private let isGoingAway = Mutex(false)

    init(instants: Instants) {
      self.instants = instants
    }

    func nextResponses(into batch: inout ResponseBatch) throws(RPCError) {
      guard isGoingAway.withLock({ $0 }) else { return }
      throw RPCError(code: .unavailable, message: "going away", retryAfterMillis: 10)
    }

    func connectionIsGoingAway() {
      instants.noted.withLock { $0.append(.now) }
      isGoingAway.withLock { $0 = true }
    }
  }

  @Test func connectionsPastTheAcceptRateAreToldWhenToComeBack() async throws {
    let metrics = TestMetrics()
    let configuration = RPCServer.Configuration(port: 0, maxConnectionsPerSecond: 1, metrics: metrics)
    try await RPCServer(router: RPCRouter(), configuration: configuration).withRunningServer { address in
      let port = address.port!
      try await RPCClient.withConnection(host: "127.0.0.1", port: port) { admitted in
        // Admitted before the storm: connections made at once are admitted in whatever order
        // their event loops set them up, not necessarily in the order they connected.
        _ = try await admitted.unary(HealthService.checkMethod, request: HealthCheckRequest(), response: HealthCheckResponse.self)
        // One token a second: of five more connections made at once, most are refused
        // (all five admitted would take four seconds). Each makes a call at once, sent with its
        // ClientHello: on a refused connection, the call fails with the refusal and its hint.
        var refusals: [RPCError] = []
        for _ in 0..<5 {
          do {
            try await RPCClient.withConnection(host: "127.0.0.1", port: port) { connection in
              _ = try await connection.unary(HealthService.checkMethod, request: HealthCheckRequest(), response: HealthCheckResponse.self)
            }
          } catch let error as RPCError {
            refusals.append(error)
          }
        }
        #expect(!refusals.isEmpty)
        #expect(try metrics.expectCounter("pushline_connections_refused_total").totalValue == refusals.count)
        #expect(try metrics.expectCounter("pushline_connections_accepted_total").totalValue == 6 - refusals.count)
        for (index, refusal) in refusals.enumerated() {
          #expect(refusal.code == .unavailable)
          // Each refusal reserves the next second's slot: up to (index + 1) s, times the 1–2 jitter.
          #expect((1...2000 * UInt32(index + 1)).contains(refusal.retryAfterMillis ?? 0))
        }
        // The connection admitted before the storm is still served.
        let health = try await admitted.unary(HealthService.checkMethod, request: HealthCheckRequest(), response: HealthCheckResponse.self)
        #expect(health.status == .serving)
      }
    }
  }

  @Test(.timeLimit(.minutes(1))) func theLameDuckPeriodSpreadsTheGoAwaysAndEndsEachConnectionsStreamsAtItsTurn() async throws {
    let instants = Instants()
    let stoppedAt = Mutex(ContinuousClock.now)
    let (started, reportStart) = AsyncStream<Void>.makeStream()
    var router = RPCRouter()
    router.registerServerStreaming(Self.method, request: MetadataEntry.self, response: MetadataEntry.self) { _, writer, _ in
      let follower = Follower(instants: instants)
      _ = try #require(writer.pump(from: follower))
      reportStart.yield()
    }
    let (ports, reportPort) = AsyncStream<Int>.makeStream()
    let (stop, stopServer) = AsyncStream<Void>.makeStream()
    let server = Task {
      let configuration = RPCServer.Configuration(port: 0, lameDuckPeriod: .milliseconds(900))
      try await RPCServer(router: router, configuration: configuration).withRunningServer { address in
        reportPort.yield(address.port!)
        for await _ in stop { break }
      }
    }
    var portIterator = ports.makeAsyncIterator()
    let port = try #require(await portIterator.next())
    try await withThrowingTaskGroup(of: RPCError?.self) { group in
      for _ in 0..<3 {
        group.addTask {
          try await RPCClient.withConnection(host: "127.0.0.1", port: port) { connection in
            do {
              for try await _ in connection.serverStreaming(Self.method, request: MetadataEntry(key: "k"), response: MetadataEntry.self) {}
              return nil
            } catch { return error as? RPCError }
          }
        }
      }
      var startedIterator = started.makeAsyncIterator()
      for _ in 0..<3 { await startedIterator.next() }
      stoppedAt.withLock { $0 = .now }
      stopServer.yield()
      for try await ended in group { #expect(ended?.code == .unavailable) }
    }
    try await server.value
    let times = instants.noted.withLock { $0 }.sorted()
    // Three connections over 900 ms: at 0, 300 and 600 ms after the shutdown began, in random
    // order (timers never fire early); all at once, they would be a few milliseconds apart.
    let stopped = stoppedAt.withLock { $0 }
    try #require(times.count == 3)
    #expect(times[1] - stopped >= .milliseconds(300))
    #expect(times[2] - stopped >= .milliseconds(600))
  }
}
