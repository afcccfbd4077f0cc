import ArgumentParser
import Foundation
import Testing

@testable import PushlineCLI

/// `pushline token`: what it refuses to mint, and where its secret comes from.
@Suite("pushline token")
struct TokenCommandTests {
  static let minting = ["--role", "subscriber", "--ttl", "60"]

  @Test("topic patterns", arguments: [
    ("driver/42", true), ("driver/42*", true), ("*", true), ("driver/*/x", false), ("", false), ("driver 42", false),
    ("**", false), (String(repeating: "a", count: 201), false),
  ])
  func topicPatterns(topic: String, isTaken: Bool) {
    let refusal = SecondsLimitTests.refusal(TokenCommand.self, Self.minting + ["--subject", "s", "--topic", topic])
    #expect((refusal == nil) == isTaken, "\(refusal ?? "taken")")
  }

  @Test func anEmptySubjectIsRefused() {
    let refusal = SecondsLimitTests.refusal(TokenCommand.self, Self.minting + ["--subject", "", "--topic", "t"])
    #expect(refusal?.contains("--subject must not be empty") == true, "\(refusal ?? "taken")")
  }

  @Test func theExpiryIsAWholeSecond() {
    #expect(TokenCommand.expiry(ttl: 60, nowMillis: 1_763_834_400_123) == 1_763_834_461_000)
    #expect(TokenCommand.expiry(ttl: 60, nowMillis: 1_763_834_400_000) == 1_763_834_460_000)
  }

  /// The secret comes from where `serve` reads it: the flag's file, else
  /// `PUSHLINE_TOKEN_SECRET_FILE`, else `PUSHLINE_TOKEN_SECRET` — and never from both variables,
  /// even with the flag, as for `serve`.
  @Test func theSecretComesFromWhereServeReadsIt() throws {
    let path = try Self.temporaryFile("from the file\n")
    defer { try? FileManager.default.removeItem(atPath: path) }
    let fromFlag = try TokenSecretOptions.parse(["--token-secret-file", path])
    let unset = try TokenSecretOptions.parse([])
    let both = ["PUSHLINE_TOKEN_SECRET": "from the variable", "PUSHLINE_TOKEN_SECRET_FILE": path]
    #expect(try unset.secret(environment: ["PUSHLINE_TOKEN_SECRET_FILE": path]) == Array("from the file".utf8))
    #expect(try unset.secret(environment: ["PUSHLINE_TOKEN_SECRET": "from the variable"]) == Array("from the variable".utf8))
    #expect(try fromFlag.secret(environment: ["PUSHLINE_TOKEN_SECRET": "from the variable"]) == Array("from the file".utf8))
    // Both variables at once are an error, unless the flag beats them, as a flag beats the
    // environment in every setting.
    #expect(try fromFlag.secret(environment: both) == Array("from the file".utf8))
    let notBoth = "set PUSHLINE_TOKEN_SECRET or PUSHLINE_TOKEN_SECRET_FILE, not both (or name the file with --token-secret-file)"
    #expect(ServeSettingsTests.failure { try unset.secret(environment: both) } == notBoth)
    let none = ServeSettingsTests.failure { try ServeSettings().readTokenSecret(environment: [:]) }
    #expect(none != nil && ServeSettingsTests.failure { try unset.secret(environment: [:]) } == none)
  }

  /// An operator who runs `serve --config serve.json` mints with `token --config serve.json`
  /// (or `PUSHLINE_CONFIG`): the file is serve's as it is, its `tokenSecretFile` names the
  /// secret, and a flag or the environment still beats it.
  @Test func theSecretComesFromServesConfigFile() throws {
    let secretFile = try Self.temporaryFile("from the config file\n")
    let flagFile = try Self.temporaryFile("from the flag\n")
    let config = try Self.temporaryFile(
      #"{"port": 7500, "storage": "memory", "gracePeriod": 20, "tokenSecretFile": "\#(secretFile)"}"#)
    defer { [secretFile, flagFile, config].forEach { try? FileManager.default.removeItem(atPath: $0) } }
    let fromConfig = try TokenSecretOptions.parse(["--config", config])
    let unset = try TokenSecretOptions.parse([])
    #expect(try fromConfig.secret(environment: [:]) == Array("from the config file".utf8))
    #expect(try unset.secret(environment: ["PUSHLINE_CONFIG": config]) == Array("from the config file".utf8))
    #expect(try fromConfig.secret(environment: ["PUSHLINE_CONFIG": "/nowhere.json"]) == Array("from the config file".utf8))
    #expect(try fromConfig.secret(environment: ["PUSHLINE_TOKEN_SECRET": "from the variable"]) == Array("from the variable".utf8))
    #expect(try fromConfig.secret(environment: ["PUSHLINE_TOKEN_SECRET_FILE": flagFile]) == Array("from the flag".utf8))
    let flagBeatsAll = try TokenSecretOptions.parse(["--config", config, "--token-secret-file", flagFile])
    #expect(try flagBeatsAll.secret(environment: [:]) == Array("from the flag".utf8))
  }

  /// A config file `serve` refuses, `token` refuses with `serve`'s message.
  @Test func aConfigFileIsCheckedAsServeChecksIt() throws {
    let config = try Self.temporaryFile(#"{"prot": 7400, "tokenSecretFile": "/run/secret"}"#)
    defer { try? FileManager.default.removeItem(atPath: config) }
    let options = try TokenSecretOptions.parse(["--config", config])
    let message = ServeSettingsTests.failure { try options.secret(environment: [:]) }
    #expect(message?.hasPrefix(#"config file \#(config): unknown key "prot""#) == true, "\(message ?? "no error")")
    #expect(message == ServeSettingsTests.failure { try ServeSettings.load(flags: .init(), configPath: config, environment: [:]) })
    let missing = try TokenSecretOptions.parse(["--config", "/nowhere.json"])
    #expect(ServeSettingsTests.failure { try missing.secret(environment: [:]) } == "cannot read the config file /nowhere.json")
  }

  /// A new file in the temporary directory holding `text`; returns its path.
  static func temporaryFile(_ text: String) throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-token-\(UUID())").path
    try text.write(toFile: path, atomically: true, encoding: .utf8)
    return path
  }
}
