import ArgumentParser
import Foundation

/// Where `token` finds the token secret: where `serve` finds it, by the same code
/// (``ServeSettings/load(flags:configPath:environment:)`` and
/// ``ServeSettings/readTokenSecret(environment:)``) — `--token-secret-file`, else
/// `PUSHLINE_TOKEN_SECRET_FILE` or `PUSHLINE_TOKEN_SECRET`, else `tokenSecretFile` in the config
/// file named by `--config` or `PUSHLINE_CONFIG` — so that whatever configures a broker also
/// mints its tokens. Never from code or a flag's value, which would end up in shell history and
/// process listings.
struct TokenSecretOptions: ParsableArguments {
  /// The environment variable holding the secret.
  static let environmentVariable = "PUSHLINE_TOKEN_SECRET"

  @Option(help: ArgumentHelp(
    "The config file of pushline serve, for its tokenSecretFile; checked as serve checks it (default: $PUSHLINE_CONFIG).",
    valueName: "file"))
  var config: String?

  @Option(help: ArgumentHelp(
    "A file holding the token secret (at least 32 bytes; trailing newline ignored); beats $PUSHLINE_TOKEN_SECRET_FILE and $PUSHLINE_TOKEN_SECRET (the secret itself), which may not both be set, and the config file's tokenSecretFile.",
    valueName: "file"))
  var tokenSecretFile: String?

  /// The secret's bytes, read as `serve` reads them: the flag, else the environment, else the
  /// config file. The environment and the config file are checked whole, as `serve` checks
  /// them, so a file `serve` refuses is refused here too, with the same message.
  ///
  /// - Throws: a ``CommandFailure`` as ``ServeSettings/load(flags:configPath:environment:)`` and
  ///   ``ServeSettings/readTokenSecret(environment:)`` throw.
  func secret(environment: [String: String] = ProcessInfo.processInfo.environment) throws(CommandFailure) -> [UInt8] {
    let flags = ServeSettings.Layer(tokenSecret: tokenSecretFile.map { .file($0) })
    return try ServeSettings.load(flags: flags, configPath: config, environment: environment).readTokenSecret(environment: environment)
  }

  /// The bytes of the file at `path`: a text file (valid UTF-8) without its trailing line
  /// feeds and carriage returns, any other byte for byte — so a secret of random bytes
  /// (`openssl rand 32 > file`) is used as it is, even one ending in a newline's byte, as any
  /// other service signing with the same file would use it.
  static func read(file path: String) throws(CommandFailure) -> [UInt8] {
    guard let data = FileManager.default.contents(atPath: path) else {
      throw CommandFailure("cannot read the token secret file \(path)")
    }
    var bytes = [UInt8](data)
    guard String(validating: bytes, as: UTF8.self) != nil else { return bytes }
    while let last = bytes.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") { bytes.removeLast() }
    return bytes
  }
}
