import ArgumentParser
import Foundation
import Logging
import PushlineBroker
import Testing

@testable import PushlineCLI

@Suite("pushline serve settings")
struct ServeSettingsTests {
  typealias Layer = ServeSettings.Layer

  static func merge(
    flags: Layer = Layer(), environment: [String: String] = [:], file: String? = nil
  ) throws(CommandFailure) -> ServeSettings {
    try ServeSettings.merge(flags: flags, environment: environment, configFile: file.map { ("serve.json", $0) })
  }

  /// The message of the failure `body` throws, or nil if it throws none.
  static func failure<Result>(_ body: () throws -> Result) -> String? {
    do {
      _ = try body()
      return nil
    } catch {
      return "\(error)"
    }
  }

  @Test func silentSourcesGiveTheDefaults() throws {
    let settings = try Self.merge()
    #expect(settings == ServeSettings())
    #expect(settings.host == "127.0.0.1" && settings.port == 7400 && settings.storage == .sqlite)
    #expect(settings.metricsPort == nil && settings.gracePeriod == 10 && settings.tokenSecret == nil)
    #expect(settings.metricsHost == "127.0.0.1")  // not --host: metrics need no token
  }

  @Test func aFlagBeatsTheEnvironmentWhichBeatsTheFileWhichBeatsTheDefault() throws {
    let file = #"{"port": 3, "host": "10.0.0.3", "dataDir": "/from/file", "gracePeriod": 3}"#
    let environment = ["PUSHLINE_PORT": "2", "PUSHLINE_HOST": "10.0.0.2"]
    let settings = try Self.merge(flags: Layer(port: 1), environment: environment, file: file)
    #expect(settings.port == 1)
    #expect(settings.host == "10.0.0.2")
    #expect(settings.dataDir == "/from/file" && settings.gracePeriod == 3)
    #expect(settings.watermarkInterval == ServeSettings().watermarkInterval)
  }

  @Test func everySettingHasAVariableAndAKey() throws {
    #expect(ServeSettings.fields.map(\.environmentVariable) == [
      "PUSHLINE_HOST", "PUSHLINE_PORT", "PUSHLINE_STORAGE", "PUSHLINE_DATA_DIR", "PUSHLINE_WATERMARK_INTERVAL",
      "PUSHLINE_TOMBSTONE_LIMIT", "PUSHLINE_TOMBSTONE_MAX_AGE", "PUSHLINE_MAX_QUEUED_CHANGES", "PUSHLINE_RECONNECT_SPREAD",
      "PUSHLINE_IDEMPOTENCY_WINDOW", "PUSHLINE_METRICS_PORT", "PUSHLINE_METRICS_HOST", "PUSHLINE_GRACE_PERIOD",
      "PUSHLINE_LAME_DUCK_PERIOD", "PUSHLINE_MAX_CONNECTIONS_PER_SECOND", "PUSHLINE_MAX_SUBSCRIBES_PER_SECOND",
      "PUSHLINE_MAX_SUBSCRIPTIONS_PER_SUBJECT",
      "PUSHLINE_TOKEN_SECRET_FILE", "PUSHLINE_LOG_LEVEL",
    ])
    let expected = ServeSettings(
      host: "0.0.0.0", port: 7500, storage: .memory, dataDir: "/data", watermarkInterval: 5, tombstoneLimit: 7,
      tombstoneMaxAge: 3600, maxQueuedChanges: 900, reconnectSpread: 3, idempotencyWindow: 60, metricsPort: 9400,
      metricsHost: "10.0.0.9", gracePeriod: 2, lameDuckPeriod: 4, maxConnectionsPerSecond: 300,
      maxSubscribesPerSecond: 200, maxSubscriptionsPerSubject: 5, tokenSecret: .file("/run/secret"), logLevel: .debug)
    let environment = [
      "PUSHLINE_HOST": "0.0.0.0", "PUSHLINE_PORT": "7500", "PUSHLINE_STORAGE": "memory", "PUSHLINE_DATA_DIR": "/data",
      "PUSHLINE_WATERMARK_INTERVAL": "5", "PUSHLINE_TOMBSTONE_LIMIT": "7", "PUSHLINE_TOMBSTONE_MAX_AGE": "3600",
      "PUSHLINE_MAX_QUEUED_CHANGES": "900", "PUSHLINE_RECONNECT_SPREAD": "3", "PUSHLINE_IDEMPOTENCY_WINDOW": "60",
      "PUSHLINE_METRICS_PORT": "9400", "PUSHLINE_METRICS_HOST": "10.0.0.9", "PUSHLINE_GRACE_PERIOD": "2", "PUSHLINE_LAME_DUCK_PERIOD": "4",
      "PUSHLINE_MAX_CONNECTIONS_PER_SECOND": "300", "PUSHLINE_MAX_SUBSCRIBES_PER_SECOND": "200",
      "PUSHLINE_MAX_SUBSCRIPTIONS_PER_SUBJECT": "5", "PUSHLINE_TOKEN_SECRET_FILE": "/run/secret", "PUSHLINE_LOG_LEVEL": "debug",
    ]
    #expect(try Self.merge(environment: environment) == expected)
    let file = """
      {"host": "0.0.0.0", "port": 7500, "storage": "memory", "dataDir": "/data", "watermarkInterval": 5,
       "tombstoneLimit": 7, "tombstoneMaxAge": 3600, "maxQueuedChanges": 900, "reconnectSpread": 3, "idempotencyWindow": 60, "metricsPort": 9400, "metricsHost": "10.0.0.9", "gracePeriod": 2, "lameDuckPeriod": 4,
       "maxConnectionsPerSecond": 300, "maxSubscribesPerSecond": 200, "maxSubscriptionsPerSubject": 5,
       "tokenSecretFile": "/run/secret", "logLevel": "debug"}
      """
    #expect(try Self.merge(file: file) == expected)
  }

  @Test func flagsAreReadUnderTheirLongNames() throws {
    let command = try ServeCommand.parse([
      "--config", "serve.json", "--port", "0", "--storage", "memory", "--data-dir", "d", "--grace-period", "3",
      "--metrics-port", "9400", "--metrics-host", "10.0.0.9", "--token-secret-file", "s", "--lame-duck-period", "1", "--max-connections-per-second", "50",
      "--max-subscribes-per-second", "0", "--max-subscriptions-per-subject", "3", "--tombstone-max-age", "60",
      "--max-queued-changes", "500", "--reconnect-spread", "2", "--log-level", "warning",
    ])
    #expect(command.config == "serve.json")
    #expect(
      command.flags
        == Layer(
          port: 0, storage: .memory, dataDir: "d", tombstoneMaxAge: 60, maxQueuedChanges: 500, reconnectSpread: 2,
          metricsPort: 9400, metricsHost: "10.0.0.9", gracePeriod: 3, lameDuckPeriod: 1,
          maxConnectionsPerSecond: 50, maxSubscribesPerSecond: 0, maxSubscriptionsPerSubject: 3, tokenSecret: .file("s"),
          logLevel: .warning))
    #expect(try ServeCommand.parse([]).flags == Layer())
  }

  @Test func theBrokerIsConfiguredFromTheSettings() {
    let configuration = ServeSettings(
      tombstoneLimit: 9, tombstoneMaxAge: 5, maxQueuedChanges: 4, reconnectSpread: 3, idempotencyWindow: 8,
      maxSubscribesPerSecond: 7, maxSubscriptionsPerSubject: 6
    ).brokerConfiguration
    #expect(configuration.maxTombstonesPerTopic == 9 && configuration.idempotencyWindow == .seconds(8))
    #expect(configuration.maxSubscribesPerSecond == 7 && configuration.maxSubscriptionsPerSubject == 6)
    #expect(configuration.maxTombstoneAge == .seconds(5) && configuration.maxQueuedChangesPerSubscription == 4)
    #expect(configuration.reconnectSpread == .seconds(3))
    let defaults = ServeSettings().brokerConfiguration, broker = BrokerConfiguration()
    #expect(defaults.maxTombstoneAge == broker.maxTombstoneAge && defaults.reconnectSpread == broker.reconnectSpread)
    #expect(defaults.maxQueuedChangesPerSubscription == broker.maxQueuedChangesPerSubscription)
  }

  /// `serve` logs the settings it runs with, each once, and where the secret comes from, never
  /// the secret.
  @Test func theSettingsAreLoggedWithoutTheSecret() throws {
    let settings = try Self.merge(environment: ["PUSHLINE_TOKEN_SECRET": "s3cret", "PUSHLINE_PORT": "7500"])
    let metadata = settings.logMetadata
    #expect(metadata["port"] == "7500" && metadata["metricsPort"] == "none" && metadata["tokenSecret"] == "environment")
    #expect(metadata["logLevel"] == "info" && metadata.count == Mirror(reflecting: settings).children.count)
    #expect(!metadata.values.contains { "\($0)".contains("s3cret") })
  }

  @Test func anEmptyVariableCountsAsUnset() throws {
    let settings = try Self.merge(environment: ["PUSHLINE_PORT": "", "PUSHLINE_TOKEN_SECRET": ""], file: #"{"port": 3}"#)
    #expect(settings.port == 3 && settings.tokenSecret == nil)
  }

  @Test func theTokenSecretFollowsTheSamePrecedence() throws {
    let secret = ["PUSHLINE_TOKEN_SECRET": "s3cret"]
    let file = #"{"tokenSecretFile": "/from/file"}"#
    #expect(try Self.merge(flags: Layer(tokenSecret: .file("/flag")), environment: secret, file: file).tokenSecret == .file("/flag"))
    #expect(try Self.merge(environment: secret, file: file).tokenSecret == .environment)
    #expect(try Self.merge(file: file).tokenSecret == .file("/from/file"))
    #expect(try Self.merge(environment: secret).readTokenSecret(environment: secret) == Array("s3cret".utf8))
  }

  @Test func aSecretNamedNowhereIsAnError() throws {
    let message = Self.failure { try ServeSettings().readTokenSecret(environment: [:]) }
    #expect(message?.contains("PUSHLINE_TOKEN_SECRET") == true)
    let environment = ["PUSHLINE_TOKEN_SECRET": "x", "PUSHLINE_TOKEN_SECRET_FILE": "/s"]
    let both = Self.failure { try Self.merge(environment: environment).readTokenSecret(environment: environment) }
    #expect(both == "set PUSHLINE_TOKEN_SECRET or PUSHLINE_TOKEN_SECRET_FILE, not both (or name the file with --token-secret-file)")
  }

  @Test func aSecretFileIsReadWithoutItsNewline() throws {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-secret-\(UUID())").path
    try "0123456789abcdef0123456789abcdef\n".write(toFile: path, atomically: true, encoding: .utf8)
    defer { try? FileManager.default.removeItem(atPath: path) }
    let settings = try Self.merge(file: #"{"tokenSecretFile": "\#(path)"}"#)
    #expect(try settings.readTokenSecret(environment: [:]) == Array("0123456789abcdef0123456789abcdef".utf8))
  }

  /// A secret of random bytes (`openssl rand 32 > file`) is used byte for byte, not decoded as
  /// text (which would turn each invalid sequence into the same three bytes).
  @Test func aSecretFileOfRandomBytesIsReadByteForByte() throws {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-secret-\(UUID())").path
    // Not UTF-8, and ending in a carriage return's and a line feed's bytes, which are the secret's.
    let secret = (0..<32).map { UInt8(truncatingIfNeeded: 0x85 + $0 * 37) } + [0xFF, 0xC3, 0x0D, 0x0A]
    try Data(secret).write(to: URL(fileURLWithPath: path))
    defer { try? FileManager.default.removeItem(atPath: path) }
    let settings = try Self.merge(file: #"{"tokenSecretFile": "\#(path)"}"#)
    #expect(try settings.readTokenSecret(environment: [:]) == secret)
  }

  @Test("bad config files", arguments: [
    (#"{"prot": 7400}"#, #"config file serve.json: unknown key "prot" (known keys: host, port, storage, "#),
    (#"{"port": "7400"}"#, #"config file serve.json: "port" must be an integer"#),
    (#"{"port": 7400.5}"#, #"config file serve.json: "port" must be an integer"#),
    (#"{"host": 127}"#, #"config file serve.json: "host" must be a string"#),
    (#"{"metricsPort": null}"#, #"config file serve.json: "metricsPort" must be an integer"#),
    (#"{"storage": "disk"}"#, #"config file serve.json: "storage" must be "sqlite" or "memory""#),
    (#"{"tokenSecret": "s3cret"}"#, #"config file serve.json: "tokenSecret" does not belong in a config file"#),
    (#"[{"port": 1}]"#, "config file serve.json: expected a JSON object of settings"),
    (#"{"port": 1,}"#, "config file serve.json: invalid JSON at byte "),
    (#"{"port": 1, "port": 2}"#, "config file serve.json: invalid JSON at byte "),
  ])
  func badConfigFiles(file: String, message: String) {
    let failure = Self.failure { try Self.merge(file: file) }
    #expect(failure?.hasPrefix(message) == true, "\(failure ?? "no error")")
  }

  @Test("bad values", arguments: [
    (["PUSHLINE_PORT": "x"], nil, #"PUSHLINE_PORT must be an integer, not "x""#),
    (["PUSHLINE_STORAGE": "disk"], nil, #"PUSHLINE_STORAGE must be "sqlite" or "memory", not "disk""#),
    (["PUSHLINE_LOG_LEVEL": "loud"], nil, #"PUSHLINE_LOG_LEVEL must be "trace" or "debug" or "info" or "notice" or "warning" or "error" or "critical", not "loud""#),
    (["PUSHLINE_PORT": "70000"], nil, "port must be 0…65535, not 70000"),
    ([:], #"{"dataDir": ""}"#, "dataDir must not be empty"),
    ([:], #"{"host": ""}"#, "host must not be empty"),
    ([:], #"{"metricsHost": ""}"#, "metricsHost must not be empty"),
    ([:], #"{"metricsPort": -1}"#, "metricsPort must be 0…65535, not -1"),
    ([:], #"{"watermarkInterval": 0}"#, "watermarkInterval must be positive, not 0"),
    (["PUSHLINE_MAX_QUEUED_CHANGES": "0"], nil, "maxQueuedChanges must be positive, not 0"),
    ([:], #"{"tombstoneMaxAge": -1}"#, "tombstoneMaxAge must not be negative, not -1"),
    (["PUSHLINE_RECONNECT_SPREAD": "31536001"], nil, "reconnectSpread must be at most 31536000 seconds (a year), not 31536001"),
    (["PUSHLINE_GRACE_PERIOD": "-1"], nil, "gracePeriod must not be negative, not -1"),
    ([:], #"{"maxConnectionsPerSecond": -5}"#, "maxConnectionsPerSecond must not be negative, not -5"),
    (["PUSHLINE_MAX_SUBSCRIBES_PER_SECOND": "-1"], nil, "maxSubscribesPerSecond must not be negative, not -1"),
    (
      ["PUSHLINE_IDEMPOTENCY_WINDOW": "9223372036854775807"], nil,
      "idempotencyWindow must be at most 31536000 seconds (a year), not 9223372036854775807"
    ),
    ([:], #"{"watermarkInterval": 31536001}"#, "watermarkInterval must be at most 31536000 seconds (a year), not 31536001"),
    (["PUSHLINE_GRACE_PERIOD": "31536001"], nil, "gracePeriod must be at most 31536000 seconds (a year), not 31536001"),
    ([:], #"{"lameDuckPeriod": 1000000000000}"#, "lameDuckPeriod must be at most 31536000 seconds (a year), not 1000000000000"),
  ])
  func badValues(environment: [String: String], file: String?, message: String) {
    #expect(Self.failure { try Self.merge(environment: environment, file: file) } == message)
  }

  @Test func aMissingConfigFileIsAnError() {
    let path = "/nonexistent/pushline-\(UUID()).json"
    let failure = Self.failure { try ServeSettings.load(flags: Layer(), configPath: path, environment: [:]) }
    #expect(failure == "cannot read the config file \(path)")
    let fromEnvironment = Self.failure {
      try ServeSettings.load(flags: Layer(), configPath: nil, environment: ["PUSHLINE_CONFIG": path])
    }
    #expect(fromEnvironment == "cannot read the config file \(path)")
  }

  @Test func theConfigFlagBeatsTheConfigVariable() throws {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-serve-\(UUID()).json").path
    try #"{"port": 7777}"#.write(toFile: path, atomically: true, encoding: .utf8)
    defer { try? FileManager.default.removeItem(atPath: path) }
    let environment = ["PUSHLINE_CONFIG": "/nonexistent/serve.json"]
    #expect(try ServeSettings.load(flags: Layer(), configPath: path, environment: environment).port == 7777)
    #expect(try ServeSettings.load(flags: Layer(), configPath: nil, environment: ["PUSHLINE_CONFIG": path]).port == 7777)
  }
}
