import ArgumentParser
import Foundation
import Logging
import NIOCore
import CoreMetrics
import Prometheus
import PushlineBroker
import PushlineRPC
import ServiceLifecycle
import UnixSignals

/// `pushline serve`: runs the push broker, and the metrics endpoint if asked, as services of a
/// `ServiceGroup` until SIGTERM or SIGINT starts their graceful shutdown.
struct ServeCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "serve",
    abstract: "Run the Pushline broker on a listen address.",
    discussion: """
      Serves /pushline.Publisher/Publish, /pushline.Publisher/PublishStream, \
      /pushline.Tracker/Subscribe, /pushline.Tracker/GetCards and /pushline.Health/Check. Stores topics in SQLite in the data directory (or in memory, \
      losing history on restart). Listens on loopback unless told otherwise. Stops on SIGINT or \
      SIGTERM with a GOAWAY to every client and a grace period for calls in progress.

      Every setting can also come from the environment, as PUSHLINE_ and the flag's name in \
      upper snake case (PUSHLINE_DATA_DIR), or from a JSON config file (--config or \
      $PUSHLINE_CONFIG), keyed by the flag's name in camel case (dataDir). A flag beats the \
      environment, which beats the file. Tokens are checked with the secret in \
      $PUSHLINE_TOKEN_SECRET or in the file named by --token-secret-file (or \
      PUSHLINE_TOKEN_SECRET_FILE, or tokenSecretFile); a config file never holds the secret itself. \
      pushline token finds the secret the same way, so pushline token --config with this file \
      mints the broker's tokens.
      """
  )

  @Option(help: ArgumentHelp("A JSON file of settings, e.g. {\"port\": 7400, \"dataDir\": \"/srv/pushline\"}.", valueName: "file"))
  var config: String?

  @Option(help: "The address to listen on (default: \(ServeSettings().host)).")
  var host: String?

  @Option(help: "The port to listen on; 0 picks a free one, printed on start (default: \(ServeSettings().port)).")
  var port: Int?

  @Option(help: "Where topics are kept: sqlite (durable, in --data-dir) or memory (lost on restart) (default: sqlite).")
  var storage: ServeSettings.Storage?

  @Option(help: ArgumentHelp("The directory of the SQLite database (default: \(ServeSettings().dataDir)).", valueName: "directory"))
  var dataDir: String?

  @Option(help: ArgumentHelp(
    "A file holding the token secret; beats $PUSHLINE_TOKEN_SECRET_FILE and $PUSHLINE_TOKEN_SECRET (the secret itself), which may not both be set, and the config file's tokenSecretFile.",
    valueName: "file"))
  var tokenSecretFile: String?

  @Option(help: ArgumentHelp(
    "Seconds of silence on a subscribed topic after which it gets a freshness watermark (default: \(ServeSettings().watermarkInterval)).",
    valueName: "seconds"))
  var watermarkInterval: Int?

  @Option(help: ArgumentHelp(
    "Tombstones kept per topic; resumes from before them get a snapshot (default: \(ServeSettings().tombstoneLimit)).",
    valueName: "count"))
  var tombstoneLimit: Int?

  @Option(help: ArgumentHelp(
    "Seconds a tombstone is kept at most, checked when its topic is published to and once a minute (default: \(ServeSettings().tombstoneMaxAge)).",
    valueName: "seconds"))
  var tombstoneMaxAge: Int?

  @Option(help: ArgumentHelp(
    "Changes queued for one subscriber; past it, the topic's queue gives way to a snapshot sent when it catches up (default: \(ServeSettings().maxQueuedChanges)).",
    valueName: "count"))
  var maxQueuedChanges: Int?

  @Option(help: ArgumentHelp(
    "Seconds over which the retry-after hints of a shutdown's GOAWAYs and of the subscriptions it ends are spread (default: \(ServeSettings().reconnectSpread)).",
    valueName: "seconds"))
  var reconnectSpread: Int?

  @Option(help: ArgumentHelp(
    "Seconds a publish's idempotency key is remembered (default: \(ServeSettings().idempotencyWindow)).", valueName: "seconds"))
  var idempotencyWindow: Int?

  @Option(help: ArgumentHelp("The admin HTTP port (GET /metrics, Prometheus text, no token needed); off if absent.", valueName: "port"))
  var metricsPort: Int?

  @Option(help: ArgumentHelp(
    "The address the admin HTTP port listens on, apart from --host (default: \(ServeSettings().metricsHost)).", valueName: "address"))
  var metricsHost: String?

  @Option(help: ArgumentHelp(
    "Seconds calls in progress may still run after their connection's shutdown GOAWAY (default: \(ServeSettings().gracePeriod)).",
    valueName: "seconds"))
  var gracePeriod: Int?

  @Option(help: ArgumentHelp(
    "Seconds over which the shutdown spreads its GOAWAYs, one connection after another (default: \(ServeSettings().lameDuckPeriod)).",
    valueName: "seconds"))
  var lameDuckPeriod: Int?

  @Option(help: ArgumentHelp(
    "New connections accepted per second; past it, retry-after hints; 0 for no limit (default: \(ServeSettings().maxConnectionsPerSecond)).",
    valueName: "rate"))
  var maxConnectionsPerSecond: Int?

  @Option(help: ArgumentHelp(
    "New subscriptions admitted per second; past it, UNAVAILABLE with retry-after hints; 0 for no limit (default: \(ServeSettings().maxSubscribesPerSecond)).",
    valueName: "rate"))
  var maxSubscribesPerSecond: Int?

  @Option(help: ArgumentHelp(
    "Subscriptions one token subject may hold at once; past it, RESOURCE_EXHAUSTED; 0 for no limit, when many readers share one subject (default: \(ServeSettings().maxSubscriptionsPerSubject)).",
    valueName: "count"))
  var maxSubscriptionsPerSubject: Int?

  @Option(help: ArgumentHelp(
    "The least severe level logged to standard error: trace, debug (each refused connection too), info, notice, warning, error or critical (default: \(ServeSettings().logLevel.rawValue)).",
    valueName: "level"))
  var logLevel: ServeSettings.LogLevel?

  /// The settings the flags give; the others come from the environment and the config file.
  var flags: ServeSettings.Layer {
    ServeSettings.Layer(
      host: host, port: port, storage: storage, dataDir: dataDir, watermarkInterval: watermarkInterval,
      tombstoneLimit: tombstoneLimit, tombstoneMaxAge: tombstoneMaxAge, maxQueuedChanges: maxQueuedChanges,
      reconnectSpread: reconnectSpread, idempotencyWindow: idempotencyWindow, metricsPort: metricsPort,
      metricsHost: metricsHost, gracePeriod: gracePeriod, lameDuckPeriod: lameDuckPeriod,
      maxConnectionsPerSecond: maxConnectionsPerSecond,
      maxSubscribesPerSecond: maxSubscribesPerSecond, maxSubscriptionsPerSubject: maxSubscriptionsPerSubject,
      tokenSecret: tokenSecretFile.map { .file($0) }, logLevel: logLevel)
  }

  func run() async throws {
    let environment = ProcessInfo.processInfo.environment
    let settings = try ServeSettings.load(flags: flags, configPath: config, environment: environment)
    let secret = try settings.readTokenSecret(environment: environment)
    let registry = PrometheusCollectorRegistry()
    var factory = PrometheusMetricsFactory(registry: registry)
    factory.durationHistogramBuckets[BrokerMetrics.commitDurationLabel] = BrokerMetrics.commitDurationBuckets
    factory.valueHistogramBuckets[BrokerMetrics.commitSizeLabel] = BrokerMetrics.commitSizeBuckets
    MetricsSystem.bootstrap(factory)
    LoggingSystem.bootstrap { label in
      var handler = StreamLogHandler.standardError(label: label)
      handler.logLevel = settings.logLevel.level
      return handler
    }
    let logger = Logger(label: "pushline.serve")
    logger.info("starting", metadata: settings.logMetadata)
    var sqlite: SQLiteBrokerStorage?
    defer {
      // However the broker stopped: a database closed is marked closed, and its log is folded in.
      do { try sqlite?.close() } catch {
        logger.warning("the database did not close; the next start replays its write-ahead log", metadata: ["error": "\(error)"])
      }
    }
    do {
      let store: any BrokerStorage
      if settings.storage == .memory {
        store = InMemoryBrokerStorage()
      } else {
        let opened = try SQLiteBrokerStorage(directory: settings.dataDir, logger: logger)
        sqlite = opened
        if let renewal = opened.epochRenewal {
          let cause =
            switch renewal {
            case .writeAheadLogLost:
              "the previous broker did not close the database (it crashed or was killed), and its write-ahead log broker.sqlite-wal is gone (deleted, restored without it, or folded in by another SQLite client)"
            case .databaseOlderThanLastRun:
              "broker.sqlite is older than the last broker run on this directory (broker.run): restored from a backup, or its log lost"
            case .runRecordMissing:
              "broker.run, the record of the last broker run on this directory, is missing although the database counts runs (removed, or the database copied here alone)"
            case .runRecordUnreadable: "broker.run, the record of the last broker run on this directory, is damaged"
            case .renewalCutShort: "the previous start, which was renewing the epochs, was stopped before it finished"
            }
          logger.error(
            "\(cause): publishes acknowledged before may be lost; every topic has a new epoch, so clients start again from snapshots",
            metadata: ["dataDir": "\(settings.dataDir)"])
        }
        store = opened
      }
      var services: [any Service] = []
      if let metricsPort = settings.metricsPort {
        services.append(MetricsEndpoint(host: settings.metricsHost, port: metricsPort, registry: registry, logger: logger))
      }
      // Last, so that the group shuts it down first: metrics stay up while the broker drains.
      services.append(BrokerHostService(
        brokerHost: BrokerHost(
          storage: store, configuration: settings.brokerConfiguration, secret: secret, host: settings.host,
          port: settings.port, gracePeriod: .seconds(settings.gracePeriod), lameDuckPeriod: .seconds(settings.lameDuckPeriod),
          maxConnectionsPerSecond: settings.maxConnectionsPerSecond),
        onServing: { address in
          let topics = settings.storage == .memory ? "in memory" : "in \(settings.dataDir)"
          Self.say("pushline: serving on \(settings.host):\(address.port ?? settings.port), topics \(topics)")
        },
        onStopping: { Self.say("pushline: stopping") }))
      var group = ServiceGroupConfiguration(
        services: services, gracefulShutdownSignals: [.sigterm, .sigint], cancellationSignals: [.sigquit], logger: logger)
      // However its calls behave, a stopping broker is gone soon after its lame-duck and grace
      // periods: then what still runs is cancelled and every connection closed.
      group.maximumGracefulShutdownDuration = .seconds(settings.lameDuckPeriod + settings.gracePeriod + Self.shutdownMargin)
      try await ServiceGroup(configuration: group).run()
    } catch is CancellationError {
      throw CommandFailure(
        "stopped at once, cutting connections short (SIGQUIT, or a graceful shutdown still running \(Self.shutdownMargin) s past its lame-duck and grace periods)")
    } catch let error as RPCError {
      throw CommandFailure("\(error)")
    } catch let error as TokenAuthorityError {
      throw CommandFailure("\(error)")
    }
  }

  /// Seconds a graceful shutdown may run past its lame-duck and grace periods before it is
  /// cut short.
  static let shutdownMargin = 5

  /// Writes `line` to standard output at once: scripts and tests wait for these lines
  /// through a pipe, where `print` would buffer them.
  private static func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
  }
}

extension ServeSettings {
  /// The settings as log metadata, one entry each (for the secret, where it comes from, never
  /// the secret): what a server runs with belongs in its log.
  var logMetadata: Logger.Metadata {
    Logger.Metadata(
      uniqueKeysWithValues: Mirror(reflecting: self).children.compactMap { child in
        child.label.map { label in
          let value = Mirror(reflecting: child.value)
          guard value.displayStyle == .optional else { return (label, .string("\(child.value)")) }
          return (label, .string(value.children.first.map { "\($0.value)" } ?? "none"))
        }
      })
  }

  /// The broker's configuration for these settings.
  var brokerConfiguration: BrokerConfiguration {
    BrokerConfiguration(
      maxTombstonesPerTopic: tombstoneLimit, maxTombstoneAge: .seconds(tombstoneMaxAge), idempotencyWindow: .seconds(idempotencyWindow),
      watermarkInterval: .seconds(watermarkInterval), maxQueuedChangesPerSubscription: maxQueuedChanges,
      maxSubscriptionsPerSubject: maxSubscriptionsPerSubject, reconnectSpread: .seconds(reconnectSpread),
      maxSubscribesPerSecond: maxSubscribesPerSecond)
  }
}
