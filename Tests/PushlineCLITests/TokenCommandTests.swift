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
  /// `PUSHLINE_TOKEN_SECRET_FILE`, else `PUSHLINE_TOKEN_SECRET` — and never from both variables.
  @Test func theSecretComesFromWhereServeReadsIt() throws {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-token-secret-\(UUID())").path
    try "from the file\n".write(toFile: path, atomically: true, encoding: .utf8)
    defer { try? FileManager.default.removeItem(atPath: path) }
    let fromFlag = try TokenSecretOptions.parse(["--token-secret-file", path])
    let unset = try TokenSecretOptions.parse([])
    let both = ["PUSHLINE_TOKEN_SECRET": "from the variable", "PUSHLINE_TOKEN_SECRET_FILE": path]
    #expect(try unset.secret(environment: ["PUSHLINE_TOKEN_SECRET_FILE": path]) == Array("from the file".utf8))
    #expect(try unset.secret(environment: ["PUSHLINE_TOKEN_SECRET": "from the variable"]) == Array("from the variable".utf8))
    #expect(try fromFlag.secret(environment: both) == Array("from the file".utf8))
    #expect(throws: CommandFailure.self) { try unset.secret(environment: both) }
    #expect(throws: CommandFailure.self) { try unset.secret(environment: [:]) }
  }
}
