import ArgumentParser
import Foundation
import PushlineBroker
import PushlineRPC

/// `pushline token`: mints a token for development and scripts.
struct TokenCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "token",
    abstract: "Mint an auth token (a JWT signed with HS256).",
    discussion: """
      The secret comes from $PUSHLINE_TOKEN_SECRET or --token-secret-file, and must be the \
      broker's. A topic ending in * covers every topic with that prefix.
      """
  )

  @Option(help: "Who the token is for, e.g. driver-42 or earnings-service.")
  var subject: String

  @Option(help: "publisher, subscriber or admin.")
  var role: String

  @Option(name: .customLong("topic"), help: "A topic or prefix* the token covers (repeat for more).")
  var topics: [String]

  @Option(help: "Seconds until the token expires (at most a year).")
  var ttl = 3600

  @OptionGroup var tokenSecret: TokenSecretOptions

  func validate() throws {
    guard !topics.isEmpty else { throw ValidationError("give at least one --topic") }
    guard (1...SecondsLimit.maximum).contains(ttl) else {
      throw ValidationError("--ttl must be positive and at most \(SecondsLimit.description), not \(ttl)")
    }
    guard Role(rawValue: role) != nil else { throw ValidationError("--role must be publisher, subscriber or admin") }
  }

  func run() async throws {
    let authority: TokenAuthority
    do {
      authority = try await TokenAuthority(secret: tokenSecret.secret(), nowMillis: WallClock.systemMillis)
    } catch let error as TokenAuthorityError {
      throw CommandFailure("\(error)")
    }
    let expiry = WallClock.systemMillis() + Int64(ttl) * 1000
    print(try await authority.mint(subject: subject, role: Role(rawValue: role)!, topics: topics, expiresAtMillis: expiry))
  }
}
