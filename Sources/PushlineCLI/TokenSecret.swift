import ArgumentParser
import Foundation

/// Where the token secret comes from: a file named on the command line or by
/// `PUSHLINE_TOKEN_SECRET_FILE`, or the `PUSHLINE_TOKEN_SECRET` environment variable, as for
/// `serve` — never from code or a flag's value, which would end up in shell history and
/// process listings.
struct TokenSecretOptions: ParsableArguments {
  /// The environment variable holding the secret.
  static let environmentVariable = "PUSHLINE_TOKEN_SECRET"

  @Option(help: "A file holding the token secret (at least 32 bytes; trailing newline ignored). Default: $PUSHLINE_TOKEN_SECRET_FILE, else $PUSHLINE_TOKEN_SECRET.")
  var tokenSecretFile: String?

  /// The secret's bytes: from the flag's file, else from the environment's two variables as
  /// `serve` reads them (`token` reads no config file).
  func secret(environment: [String: String] = ProcessInfo.processInfo.environment) throws(CommandFailure) -> [UInt8] {
    let (secretVariable, fileVariable) = (Self.environmentVariable, Self.environmentVariable + "_FILE")
    let secret = environment[secretVariable].flatMap { $0.isEmpty ? nil : $0 }
    let file = environment[fileVariable].flatMap { $0.isEmpty ? nil : $0 }
    if let path = tokenSecretFile ?? file {
      guard tokenSecretFile != nil || secret == nil else { throw CommandFailure("set \(secretVariable) or \(fileVariable), not both") }
      return try Self.read(file: path)
    }
    guard let secret else {
      throw CommandFailure(
        "no token secret: set \(secretVariable), or name a file holding it with \(fileVariable) or --token-secret-file "
          + "(generate one with: openssl rand -hex 32)")
    }
    return Array(secret.utf8)
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
