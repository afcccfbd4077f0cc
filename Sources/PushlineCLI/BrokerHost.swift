import CoreMetrics
import Logging
import NIOCore
import PushlineBroker
import PushlineRPC
import PushlineRPCNIO

/// A broker served on TCP: the pieces `serve` and `demo` both assemble — storage, the broker
/// and its periodic duties, the token authority, the RPC server.
struct BrokerHost {
  /// What the running broker offers to the code it runs.
  struct Running {
    var address: SocketAddress
    var broker: Broker
    var authority: TokenAuthority
  }

  var storage: any BrokerStorage
  var configuration: BrokerConfiguration
  var secret: [UInt8]
  var host: String
  var port: Int
  /// On shutdown, how long calls in progress may still run after their connection's GOAWAY.
  var gracePeriod: Duration = .seconds(10)
  /// On shutdown, the period over which the GOAWAYs (and the ends of subscriptions) are spread.
  var lameDuckPeriod: Duration = .zero
  /// New connections accepted per second; 0 for no limit.
  var maxConnectionsPerSecond = 0
  /// Where the RPC server logs (where it listens, its shutdown, the connections it closes).
  var rpcLogger = Logger(label: "pushline.rpc")
  /// Where the RPC server reports its connections (the broker's own figures go to
  /// `configuration.metrics`); nil for swift-metrics' global factory as it is when the host
  /// starts, after `serve` has bootstrapped it.
  var connectionMetrics: (any MetricsFactory)?

  /// Starts the broker, runs `body` while it serves, then shuts it down gracefully: the
  /// GOAWAYs spread over the lame-duck period, each ending its connection's subscriptions
  /// with a retry-after hint, then the grace period. If `body` throws, the server stops at once.
  func run<Result: Sendable>(_ body: (Running) async throws -> Result) async throws -> Result {
    let broker = try await Broker(storage: storage, configuration: configuration)
    let authority = try await TokenAuthority(secret: secret, nowMillis: configuration.nowMillis)
    var router = RPCRouter()
    BrokerService.register(broker, authority: authority, in: &router)
    let server = RPCServer(
      router: router,
      configuration: .init(
        host: host, port: port, connection: .init(limits: BrokerService.connectionLimits), gracePeriod: gracePeriod,
        lameDuckPeriod: lameDuckPeriod, reconnectSpread: configuration.reconnectSpread,  // the streams' hints' spread
        maxConnectionsPerSecond: maxConnectionsPerSecond, metrics: connectionMetrics ?? MetricsSystem.factory, logger: rpcLogger))
    return try await withThrowingTaskGroup(of: Void.self) { group in
      // The periodic duties (watermarks, expired tokens) go on until the last connection closes.
      group.addTask { await broker.run() }
      defer { group.cancelAll() }
      return try await server.withRunningServer { address in
        try await body(Running(address: address, broker: broker, authority: authority))
      }
    }
  }
}
