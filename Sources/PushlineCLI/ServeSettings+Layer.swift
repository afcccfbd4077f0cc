import ArgumentParser
import PushlineText

extension ServeSettings {
  /// The settings one source gives: nil where it says nothing, so that a lower source or the
  /// default can fill in.
  struct Layer: Equatable, Sendable {
    var host: String?
    var port: Int?
    var storage: Storage?
    var dataDir: String?
    var watermarkInterval: Int?
    var tombstoneLimit: Int?
    var tombstoneMaxAge: Int?
    var maxQueuedChanges: Int?
    var reconnectSpread: Int?
    var idempotencyWindow: Int?
    var metricsPort: Int?
    var metricsHost: String?
    var gracePeriod: Int?
    var lameDuckPeriod: Int?
    var maxConnectionsPerSecond: Int?
    var maxSubscribesPerSecond: Int?
    var maxSubscriptionsPerSubject: Int?
    var tokenSecret: TokenSecretSource?
    var logLevel: LogLevel?

    /// This layer, with each setting it lacks taken from `lower`.
    func filled(from lower: Layer) -> Layer {
      var layer = self
      for field in ServeSettings.fields { field.fill(&layer, lower) }
      return layer
    }
  }

  /// One setting as the environment and the config file name it: its key is the long flag's
  /// name in camel case (`dataDir` for `--data-dir`), its variable `PUSHLINE_` and the key in
  /// upper snake case (`PUSHLINE_DATA_DIR`).
  struct Field: Sendable {
    let key: String
    let environmentVariable: String
    /// What a value must be, for error messages: "an integer", "a string".
    let expected: String
    /// Sets the setting from an environment variable's text; false if the text is no value
    /// of the setting's type.
    let setText: @Sendable (inout Layer, String) -> Bool
    /// Sets the setting from a config file's value; false if it is no value of the setting's type.
    let setJSON: @Sendable (inout Layer, JSONValue) -> Bool
    /// Copies the setting from the second layer into the first if the first lacks it.
    let fill: @Sendable (inout Layer, Layer) -> Void

    init<Value: SettingValue>(_ key: String, _ path: any WritableKeyPath<Layer, Value?> & Sendable) {
      self.key = key
      environmentVariable = "PUSHLINE_" + key.reduce(into: "") { name, character in
        if character.isUppercase { name += "_" }
        name += character.uppercased()
      }
      expected = Value.expected
      setText = { layer, text in
        guard let value = Value(argument: text) else { return false }
        layer[keyPath: path] = value
        return true
      }
      setJSON = { layer, json in
        guard let value = Value(json: json) else { return false }
        layer[keyPath: path] = value
        return true
      }
      fill = { layer, lower in
        if layer[keyPath: path] == nil { layer[keyPath: path] = lower[keyPath: path] }
      }
    }
  }

  /// Every setting a flag, a variable or the config file can give.
  static let fields: [Field] = [
    Field("host", \.host), Field("port", \.port), Field("storage", \.storage), Field("dataDir", \.dataDir),
    Field("watermarkInterval", \.watermarkInterval), Field("tombstoneLimit", \.tombstoneLimit),
    Field("tombstoneMaxAge", \.tombstoneMaxAge), Field("maxQueuedChanges", \.maxQueuedChanges),
    Field("reconnectSpread", \.reconnectSpread),
    Field("idempotencyWindow", \.idempotencyWindow), Field("metricsPort", \.metricsPort),
    Field("metricsHost", \.metricsHost),
    Field("gracePeriod", \.gracePeriod), Field("lameDuckPeriod", \.lameDuckPeriod),
    Field("maxConnectionsPerSecond", \.maxConnectionsPerSecond), Field("maxSubscribesPerSecond", \.maxSubscribesPerSecond),
    Field("maxSubscriptionsPerSubject", \.maxSubscriptionsPerSubject), Field("tokenSecretFile", \.tokenSecret),
    Field("logLevel", \.logLevel),
  ]
}

/// A type a `serve` setting can have. Environment variables give text, parsed as
/// ArgumentParser parses the flag; the config file gives typed JSON, so that `"port": "7400"`
/// there is an error rather than a silent conversion.
protocol SettingValue: ExpressibleByArgument, Sendable {
  /// What a value must be, for error messages: "an integer", "a string".
  static var expected: String { get }
  /// The value `json` holds, or nil if it holds another type.
  init?(json: JSONValue)
}

extension String: SettingValue {
  static var expected: String { "a string" }

  init?(json: JSONValue) {
    guard case .string(let value) = json else { return nil }
    self = value
  }
}

extension Int: SettingValue {
  static var expected: String { "an integer" }

  init?(json: JSONValue) {
    guard case .number(let text) = json, let value = Int(text) else { return nil }
    self = value
  }
}

extension ServeSettings.Storage: SettingValue {
  static var expected: String { allCases.map { "\"\($0.rawValue)\"" }.joined(separator: " or ") }

  init?(json: JSONValue) {
    guard case .string(let text) = json else { return nil }
    self.init(rawValue: text)
  }
}

/// As a setting (`--token-secret-file`, `PUSHLINE_TOKEN_SECRET_FILE`, `tokenSecretFile`), the
/// source is always a file's path; `PUSHLINE_TOKEN_SECRET` is read apart (see
/// ``ServeSettings/Layer/init(environment:)``).
extension ServeSettings.TokenSecretSource: SettingValue {
  static var expected: String { "a string (the path of a file holding the secret)" }

  init?(argument: String) { self = .file(argument) }

  init?(json: JSONValue) {
    guard case .string(let path) = json else { return nil }
    self = .file(path)
  }
}
