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
      The secret must be the broker's, and is found where pushline serve finds it: in the file \
      named by --token-secret-file, else in $PUSHLINE_TOKEN_SECRET or the file named by \
      $PUSHLINE_TOKEN_SECRET_FILE, else in the file named by tokenSecretFile in serve's config \
      file (--config or $PUSHLINE_CONFIG), which is checked as serve checks it. A topic ending \
      in * covers every topic with that prefix.
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
    guard !subject.isEmpty else { throw ValidationError("--subject must not be empty: subjects share a subscription quota") }
    guard !topics.isEmpty else { throw ValidationError("give at least one --topic") }
    for topic in topics {
      // A pattern is a topic name, or a prefix of one followed by `*`: anything else would
      // cover no topic a publisher can name.
      let name = topic.utf8.last == UInt8(ascii: "*") ? String(topic.dropLast()) : topic
      guard name.isEmpty && topic == "*" || (try? TopicName.validate(name)) != nil else {
        throw ValidationError(
          "--topic \"\(topic)\" is no topic name or prefix* (1 to \(TopicName.maxLength) bytes of A-Z a-z 0-9 . _ - / :, then an optional *)")
      }
    }
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
    let expiry = Self.expiry(ttl: ttl, nowMillis: WallClock.systemMillis())
    print(try await authority.mint(subject: subject, role: Role(rawValue: role)!, topics: topics, expiresAtMillis: expiry))
  }

  /// When a token minted at `nowMillis` for `ttl` seconds expires, in Unix milliseconds of a
  /// whole second, rounded up so the token lives at least `ttl`: JWT's `exp` is a NumericDate,
  /// which some libraries read as an integer only.
  static func expiry(ttl: Int, nowMillis: Int64) -> Int64 {
    ((nowMillis + 999) / 1000 + Int64(ttl)) * 1000
  }
}
