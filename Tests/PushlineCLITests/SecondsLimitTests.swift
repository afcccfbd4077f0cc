import ArgumentParser
import Testing

@testable import PushlineCLI

/// Options in seconds are checked before a command runs: one past a year, infinite or not a
/// number is refused with a message, instead of overflowing the milliseconds it becomes.
@Suite("Options in seconds: at most a year")
struct SecondsLimitTests {
  /// The message `Command` refuses `arguments` with, or nil if it takes them.
  static func refusal<Command: ParsableCommand>(_: Command.Type, _ arguments: [String]) -> String? {
    do {
      _ = try Command.parse(arguments)
      return nil
    } catch {
      return Command.message(for: error)
    }
  }

  @Test("ping --timeout", arguments: ["inf", "1e300", "nan", "0", "31536000.5"])
  func pingTimeout(timeout: String) {
    #expect(
      Self.refusal(PingCommand.self, ["127.0.0.1:7400", "--timeout", timeout])
        == "--timeout must be positive and at most 31536000 seconds (a year), not \(Double(timeout)!)")
  }

  @Test func tokenTTL() {
    let token = ["--subject", "s", "--role", "subscriber", "--topic", "t", "--ttl"]
    #expect(
      Self.refusal(TokenCommand.self, token + ["9223372036854775807"])
        == "--ttl must be positive and at most 31536000 seconds (a year), not 9223372036854775807")
    #expect(Self.refusal(TokenCommand.self, token + ["31536000"]) == nil)
  }

  @Test func watchStaleAfter() {
    #expect(
      Self.refusal(WatchCommand.self, ["127.0.0.1:7400", "--stale-after", "9223372036854775807"])
        == "--stale-after must be at least 0 and at most 31536000 seconds (a year), not 9223372036854775807")
    #expect(
      Self.refusal(WatchCommand.self, ["127.0.0.1:7400", "--stale-after=-1"])
        == "--stale-after must be at least 0 and at most 31536000 seconds (a year), not -1")
    #expect(Self.refusal(WatchCommand.self, ["127.0.0.1:7400", "--stale-after", "0"]) == nil)
  }
}
