import ArgumentParser
import PushlineBroker

/// The settings of `pushline serve`, each taken from the first source that has it: a flag, then
/// the environment, then the config file, then the default written here.
///
/// The sources are read into ``Layer``s and merged by ``merge(flags:environment:configFile:)``,
/// a pure function, so that precedence and error messages are tested without a server.
struct ServeSettings: Equatable, Sendable {
  /// Where topics are kept.
  enum Storage: String, CaseIterable, Sendable, ExpressibleByArgument {
    /// SQLite in ``ServeSettings/dataDir``: durable.
    case sqlite
    /// In memory: history is lost on restart (the epochs change, so clients take snapshots).
    case memory
  }

  /// Where the token secret comes from. The secret itself is never a setting — it would end up
  /// in config files and process listings — only where to find it.
  enum TokenSecretSource: Equatable, Sendable {
    /// The `PUSHLINE_TOKEN_SECRET` environment variable.
    case environment
    /// A file holding the secret (a trailing newline is ignored).
    case file(String)
    /// `PUSHLINE_TOKEN_SECRET` and `PUSHLINE_TOKEN_SECRET_FILE` both: an error, unless a flag
    /// names the secret's file and so beats the environment, as flags do.
    case bothVariables
  }

  /// The address to listen on; loopback unless told otherwise, so nothing is exposed by accident.
  var host = "127.0.0.1"
  /// The port to listen on; 0 picks a free one.
  var port = 7400
  var storage = Storage.sqlite
  /// The directory of the SQLite database.
  var dataDir = "pushline-data"
  /// Seconds of silence on a subscribed topic after which it gets a freshness watermark.
  var watermarkInterval = 30
  /// Tombstones kept per topic before the oldest go.
  var tombstoneLimit = 1000
  /// Seconds a tombstone is kept at most (checked when its topic is published to, and once a minute).
  var tombstoneMaxAge = Int(BrokerConfiguration().maxTombstoneAge.components.seconds)
  /// Changes queued for one subscriber before a topic's queue gives way to a snapshot.
  var maxQueuedChanges = BrokerConfiguration().maxQueuedChangesPerSubscription
  /// Seconds over which the retry-after hints of a shutdown's GOAWAYs and of the subscriptions
  /// it ends are spread.
  var reconnectSpread = Int(BrokerConfiguration().reconnectSpread.components.seconds)
  /// Seconds a publish's idempotency key is remembered.
  var idempotencyWindow = 600
  /// The admin HTTP port for `GET /metrics`; no endpoint if nil.
  var metricsPort: Int?
  /// The address the admin HTTP port listens on: loopback unless told otherwise, apart from
  /// ``host``, since the metrics need no token (a broker serving the world keeps them private).
  var metricsHost = "127.0.0.1"
  /// Seconds calls in progress may still run after their connection's shutdown GOAWAY.
  var gracePeriod = 10
  /// Seconds over which the shutdown spreads its GOAWAYs, one connection after another.
  var lameDuckPeriod = 5
  /// New connections accepted per second (in bursts of as many); 0 for no limit.
  var maxConnectionsPerSecond = 10_000
  /// New subscriptions admitted per second (in bursts of as many); 0 for no limit.
  var maxSubscribesPerSecond = BrokerConfiguration().maxSubscribesPerSecond
  /// Subscriptions one token subject may hold at once; 0 for no limit.
  var maxSubscriptionsPerSubject = BrokerConfiguration().maxSubscriptionsPerSubject
  /// Nil when no source names one; reading the secret then fails (see ``readTokenSecret(environment:)``).
  var tokenSecret: TokenSecretSource?
  /// The least severe level logged: `debug` adds each connection refused or timed out.
  var logLevel = LogLevel.info
}

extension ServeSettings {
  /// The environment variable naming a config file when `--config` is absent.
  static let configEnvironmentVariable = "PUSHLINE_CONFIG"

  /// Merges the sources, each setting from the first that has it — `flags`, then
  /// `environment`, then `configFile` (its path, for messages, and its text), then the
  /// default — and checks the result. Reads no file and no process state.
  ///
  /// - Throws: a ``CommandFailure`` naming the file's key that is unknown or of the wrong type,
  ///   the variable whose text is no value of its setting's type, the setting out of range, or
  ///   the file's JSON syntax error.
  static func merge(
    flags: Layer, environment: [String: String], configFile: (path: String, text: String)?
  ) throws(CommandFailure) -> ServeSettings {
    var layer = flags.filled(from: try Layer(environment: environment))
    if let configFile { layer = layer.filled(from: try Layer(configFile: configFile.text, path: configFile.path)) }
    return try ServeSettings(layer)
  }

  /// The settings from `layer`, defaults where it is silent.
  init(_ layer: Layer) throws(CommandFailure) {
    self.init()
    host = layer.host ?? host
    port = layer.port ?? port
    storage = layer.storage ?? storage
    dataDir = layer.dataDir ?? dataDir
    watermarkInterval = layer.watermarkInterval ?? watermarkInterval
    tombstoneLimit = layer.tombstoneLimit ?? tombstoneLimit
    tombstoneMaxAge = layer.tombstoneMaxAge ?? tombstoneMaxAge
    maxQueuedChanges = layer.maxQueuedChanges ?? maxQueuedChanges
    reconnectSpread = layer.reconnectSpread ?? reconnectSpread
    idempotencyWindow = layer.idempotencyWindow ?? idempotencyWindow
    metricsPort = layer.metricsPort ?? metricsPort
    metricsHost = layer.metricsHost ?? metricsHost
    gracePeriod = layer.gracePeriod ?? gracePeriod
    lameDuckPeriod = layer.lameDuckPeriod ?? lameDuckPeriod
    maxConnectionsPerSecond = layer.maxConnectionsPerSecond ?? maxConnectionsPerSecond
    maxSubscribesPerSecond = layer.maxSubscribesPerSecond ?? maxSubscribesPerSecond
    maxSubscriptionsPerSubject = layer.maxSubscriptionsPerSubject ?? maxSubscriptionsPerSubject
    tokenSecret = layer.tokenSecret ?? tokenSecret
    logLevel = layer.logLevel ?? logLevel
    try check()
  }

  /// Throws a ``CommandFailure`` naming the first setting out of its range or empty. Durations are at
  /// most a year (``SecondsLimit``); counts and rates have no upper bound.
  private func check() throws(CommandFailure) {
    // An empty path would put the broker's files in the working directory, an empty host
    // fail only at the bind: neither is what anyone meant.
    for (key, value) in [("host", host), ("metricsHost", metricsHost), ("dataDir", dataDir)] where value.isEmpty {
      throw CommandFailure("\(key) must not be empty")
    }
    for (key, value) in [("port", port), ("metricsPort", metricsPort ?? 0)] where !(0...65_535).contains(value) {
      throw CommandFailure("\(key) must be 0…65535, not \(value)")
    }
    for (key, value) in [("watermarkInterval", watermarkInterval), ("maxQueuedChanges", maxQueuedChanges)] where value <= 0 {
      throw CommandFailure("\(key) must be positive, not \(value)")
    }
    let durations = [
      ("watermarkInterval", watermarkInterval), ("idempotencyWindow", idempotencyWindow), ("gracePeriod", gracePeriod),
      ("lameDuckPeriod", lameDuckPeriod), ("tombstoneMaxAge", tombstoneMaxAge), ("reconnectSpread", reconnectSpread),
    ]
    for (key, value) in durations where value > SecondsLimit.maximum {
      throw CommandFailure("\(key) must be at most \(SecondsLimit.description), not \(value)")
    }
    let counts = [
      ("tombstoneLimit", tombstoneLimit), ("idempotencyWindow", idempotencyWindow), ("gracePeriod", gracePeriod),
      ("lameDuckPeriod", lameDuckPeriod), ("tombstoneMaxAge", tombstoneMaxAge), ("reconnectSpread", reconnectSpread),
      ("maxConnectionsPerSecond", maxConnectionsPerSecond),
      ("maxSubscribesPerSecond", maxSubscribesPerSecond), ("maxSubscriptionsPerSubject", maxSubscriptionsPerSubject),
    ]
    for (key, value) in counts where value < 0 {
      throw CommandFailure("\(key) must not be negative, not \(value)")
    }
  }
}
