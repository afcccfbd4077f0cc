/// Who is calling, as their verified token says: the broker's authorization decisions read
/// nothing else.
public struct Principal: Hashable, Sendable {
  /// The token's subject, for example a driver's or a service's id.
  public var subject: String
  public var role: Role
  /// The topics the token covers: a name matches itself; a pattern ending in `*` matches
  /// every topic that starts with what precedes it (`driver/42/*`, or `*` for all).
  public var topics: [String]
  /// When the token stops being valid, in Unix milliseconds; a stream outliving it ends
  /// with UNAUTHENTICATED.
  public var expiresAtMillis: Int64
  /// When the token starts being valid (its `nbf`), in Unix milliseconds; `.min` for a token
  /// that does not say. ``TokenAuthority`` refuses it until then, less a minute for clocks'
  /// skew.
  public var notBeforeMillis: Int64

  /// A principal; ``TokenAuthority`` makes these from tokens.
  public init(subject: String, role: Role, topics: [String], expiresAtMillis: Int64, notBeforeMillis: Int64 = .min) {
    self.subject = subject
    self.role = role
    self.topics = topics
    self.expiresAtMillis = expiresAtMillis
    self.notBeforeMillis = notBeforeMillis
  }

  /// Whether the token's topic claims cover `topic`.
  public func covers(_ topic: String) -> Bool {
    // Compared as UTF-8 bytes, as topic names are (publishes ask this each).
    topics.contains { pattern in
      pattern.utf8.last == UInt8(ascii: "*") ? topic.utf8.starts(with: pattern.utf8.dropLast()) : topic == pattern
    }
  }

  /// Whether the role allows publishing.
  public var mayPublish: Bool { role == .publisher || role == .admin }

  /// Whether the role allows subscribing and pulling snapshots.
  public var mayRead: Bool { role == .subscriber || role == .admin }
}
