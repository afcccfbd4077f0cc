import Foundation
import PushlineText

extension ServeSettings.Layer {
  /// The settings in `environment`: one variable per setting (see ``ServeSettings/Field``),
  /// plus `PUSHLINE_TOKEN_SECRET`, the secret itself. An empty variable counts as unset.
  ///
  /// - Throws: a ``CommandFailure`` naming a variable whose text is no value of its setting's
  ///   type. Both token secret variables set at once is an error only if no flag beats them
  ///   (``ServeSettings/TokenSecretSource/bothVariables``).
  init(environment: [String: String]) throws(CommandFailure) {
    self.init()
    for field in ServeSettings.fields {
      guard let text = environment[field.environmentVariable], !text.isEmpty else { continue }
      guard field.setText(&self, text) else {
        throw CommandFailure("\(field.environmentVariable) must be \(field.expected), not \"\(text)\"")
      }
    }
    let secretVariable = TokenSecretOptions.environmentVariable
    if let secret = environment[secretVariable], !secret.isEmpty {
      tokenSecret = tokenSecret == nil ? .environment : .bothVariables
    }
  }

  /// The settings in a config file's `text`: a JSON object keyed by the settings' keys (see
  /// ``ServeSettings/Field``), each value of its setting's JSON type. The token secret itself
  /// has no key: a file holds at most the path of the file that holds it.
  ///
  /// - Throws: a ``CommandFailure`` naming `path` and the key that is unknown, of the wrong
  ///   type, or the secret; or the JSON syntax error.
  init(configFile text: String, path: String) throws(CommandFailure) {
    self.init()
    let document: JSONValue
    do {
      document = try JSONParser.parse(text)
    } catch {
      throw CommandFailure("config file \(path): \(error)")
    }
    guard case .object(let members) = document else {
      throw CommandFailure("config file \(path): expected a JSON object of settings")
    }
    for (key, value) in members {
      guard key != "tokenSecret" else {
        throw CommandFailure(
          "config file \(path): \"tokenSecret\" does not belong in a config file; name a file holding it with "
            + "\"tokenSecretFile\", or set \(TokenSecretOptions.environmentVariable)")
      }
      guard let field = ServeSettings.fields.first(where: { $0.key == key }) else {
        let known = ServeSettings.fields.map(\.key).joined(separator: ", ")
        throw CommandFailure("config file \(path): unknown key \"\(key)\" (known keys: \(known))")
      }
      guard field.setJSON(&self, value) else {
        throw CommandFailure("config file \(path): \"\(key)\" must be \(field.expected)")
      }
    }
  }
}

extension ServeSettings {
  /// The settings of this process: `flags`, `environment`, and the config file named by
  /// `configPath` or else by `$PUSHLINE_CONFIG`, if any, merged by
  /// ``merge(flags:environment:configFile:)``.
  ///
  /// - Throws: a ``CommandFailure`` if the config file cannot be read, or as `merge` does.
  static func load(flags: Layer, configPath: String?, environment: [String: String]) throws(CommandFailure) -> ServeSettings {
    guard let path = configPath ?? environment[configEnvironmentVariable].flatMap({ $0.isEmpty ? nil : $0 }) else {
      return try merge(flags: flags, environment: environment, configFile: nil)
    }
    guard let data = FileManager.default.contents(atPath: path) else {
      throw CommandFailure("cannot read the config file \(path)")
    }
    return try merge(flags: flags, environment: environment, configFile: (path, String(decoding: data, as: UTF8.self)))
  }

  /// The token secret's bytes, from where ``tokenSecret`` says.
  ///
  /// - Throws: a ``CommandFailure`` if no source names a secret, the environment names two, or
  ///   its file cannot be read.
  func readTokenSecret(environment: [String: String]) throws(CommandFailure) -> [UInt8] {
    switch tokenSecret {
    case .bothVariables:
      let variable = TokenSecretOptions.environmentVariable
      throw CommandFailure("set \(variable) or \(variable)_FILE, not both (or name the file with --token-secret-file)")
    case .file(let path):
      return try TokenSecretOptions.read(file: path)
    case .environment:
      return Array((environment[TokenSecretOptions.environmentVariable] ?? "").utf8)
    case nil:
      let variable = TokenSecretOptions.environmentVariable
      throw CommandFailure(
        "no token secret: set \(variable), or name a file holding it with \(variable)_FILE, --token-secret-file "
          + "or tokenSecretFile in the config file (generate one with: openssl rand -hex 32)")
    }
  }
}
