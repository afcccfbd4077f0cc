import ArgumentParser
import Dispatch
import Foundation
import NIOCore
import Logging
import CoreMetrics
import Prometheus
import PushlineBroker
import PushlineRPC
import PushlineRPCNIO

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `pushline serve`: runs the push broker until SIGINT or SIGTERM.
struct ServeCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "serve",
    abstract: "Run the Pushline broker on a listen address.",
    discussion: """
      Serves /pushline.Publisher/Publish, /pushline.Tracker/Subscribe, /pushline.Tracker/GetCards \
      and /pushline.Health/Check. Stores topics in SQLite in the data directory (or in memory, \
      losing history on restart). Tokens are checked with the secret from \
      $PUSHLINE_TOKEN_SECRET or --token-secret-file. Listens on loopback unless told otherwise. \
      Stops on SIGINT or SIGTERM with a GOAWAY to every client.
      """
  )

  /// Where topics are kept.
  enum Storage: String, ExpressibleByArgument, CaseIterable {
    case sqlite, memory
  }

  @Option(help: "The address to listen on.")
  var host = "127.0.0.1"

  @Option(help: "The port to listen on; 0 picks a free one (printed on start).")
  var port = 7400

  @Option(help: "Where topics are kept: sqlite (durable, in --data-dir) or memory (lost on restart).")
  var storage = Storage.sqlite

  @Option(help: "The directory of the SQLite database.")
  var dataDir = "pushline-data"

  @OptionGroup var tokenSecret: TokenSecretOptions

  @Option(help: "Seconds of silence after which a subscriber gets a freshness watermark.")
  var watermarkInterval = 30

  @Option(help: "Tombstones kept per topic before the oldest go (resumes from before them get a snapshot).")
  var tombstoneLimit = 1000

  @Option(help: "Seconds a publish's idempotency key is remembered.")
  var idempotencyWindow = 600

  @Option(help: "A port for the admin HTTP endpoint (GET /metrics, Prometheus text), on --host; off if absent.")
  var metricsPort: Int?

  func validate() throws {
    guard (0...65_535).contains(port), (0...65_535).contains(metricsPort ?? 0) else {
      throw ValidationError("--port and --metrics-port must be 0…65535")
    }
    guard watermarkInterval > 0, tombstoneLimit >= 0, idempotencyWindow >= 0 else {
      throw ValidationError("--watermark-interval must be positive, --tombstone-limit and --idempotency-window not negative")
    }
  }

  func run() async throws {
    let secret = try tokenSecret.secret()
    let registry = PrometheusCollectorRegistry()
    MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
    let logger = Logger(label: "pushline.serve")
    let configuration = BrokerConfiguration(
      maxTombstonesPerTopic: tombstoneLimit, idempotencyWindow: .seconds(idempotencyWindow),
      watermarkInterval: .seconds(watermarkInterval))
    do {
      let store: any BrokerStorage = storage == .memory ? InMemoryBrokerStorage() : try SQLiteBrokerStorage(directory: dataDir)
      var metricsChannel: (any Channel)?
      if let metricsPort { metricsChannel = try await MetricsEndpoint.bind(host: host, port: metricsPort, registry: registry) }
      defer { metricsChannel?.close(promise: nil) }
      if let address = metricsChannel?.localAddress { logger.info("metrics on http://\(host):\(address.port ?? 0)/metrics") }
      let brokerHost = BrokerHost(storage: store, configuration: configuration, secret: secret, host: host, port: port)
      try await brokerHost.run { running in
        let where_ = storage == .memory ? "in memory" : "in \(dataDir)"
        // Unbuffered: scripts and tests wait for this line through a pipe.
        FileHandle.standardOutput.write(Data("pushline: serving on \(host):\(running.address.port ?? port), topics \(where_)\n".utf8))
        await Self.terminationSignal()
        print("pushline: stopping")
      }
    } catch let error as RPCError {
      throw CommandFailure("\(error)")
    } catch let error as TokenAuthorityError {
      throw CommandFailure("\(error)")
    }
  }

  /// Returns when the process receives SIGINT or SIGTERM.
  static func terminationSignal() async {
    let (signals, continuation) = AsyncStream<Int32>.makeStream()
    let sources = [SIGINT, SIGTERM].map { number in
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number)
      source.setEventHandler { continuation.yield(number) }
      source.resume()
      return source
    }
    var iterator = signals.makeAsyncIterator()
    _ = await iterator.next()
    sources.forEach { $0.cancel() }
  }
}
