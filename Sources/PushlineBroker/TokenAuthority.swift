import Foundation
import JWTKit
public import PushlineRPC
import Synchronization

/// Mints and verifies the broker's tokens: JWTs signed with HS256 and a shared secret, which
/// comes from configuration or the environment, never from code.
public final class TokenAuthority: Sendable {
  private let keys: JWTKeyCollection
  private let nowMillis: @Sendable () -> Int64
  /// A body waiting for a token's check (see ``withPrincipal(of:_:)``).
  public typealias Waiter = @Sendable (Result<Principal, RPCError>) -> Void

  private struct Tokens {
    /// Verified tokens, so that a connection's calls do not each pay for a signature check.
    var verified: [String: Principal] = [:]
    /// Tokens that did not verify, with why: a peer repeating a bad token on call after call
    /// costs a lookup each, not a signature check.
    var rejected: [String: RPCError] = [:]
    /// Tokens being checked, each with the bodies waiting for it, oldest first.
    var checking: [String: [Waiter]] = [:]
    /// The token found last, with its principal: a connection's calls carry the very same
    /// string, which compares equal at once, where a lookup in `verified` hashes the whole
    /// token (a few hundred bytes) for every publish.
    var last: (token: String, principal: Principal)?

    /// The principal of `token`, if it was verified.
    mutating func principal(of token: String) -> Principal? {
      if let last, TokenAuthority.sameBytes(token, asASCII: last.token) { return last.principal }
      guard TokenAuthority.isASCII(token), let principal = verified[token] else { return nil }
      last = (token, principal)
      return principal
    }
  }

  private let tokens = Mutex(Tokens())
  private static let cacheLimit = 10_000
  /// Fewer rejected tokens than verified ones are kept: anyone can make them (each up to a
  /// ClientHello's 16 KiB).
  private static let rejectedLimit = 1_000
  /// How far ahead of the broker's clock a token's `nbf` may be: the clocks of whoever mints
  /// tokens and of the broker differ a little.
  static let notBeforeSkewMillis: Int64 = 60_000

  /// An authority for `secret` (at least 32 bytes, as HS256 asks).
  ///
  /// - Throws: ``TokenAuthorityError/secretTooShort`` for a shorter secret.
  public init(secret: [UInt8], nowMillis: @escaping @Sendable () -> Int64) async throws {
    guard secret.count >= 32 else { throw TokenAuthorityError.secretTooShort(secret.count) }
    keys = JWTKeyCollection()
    await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
    self.nowMillis = nowMillis
  }

  /// A signed token for `subject` with `role` on `topics`, valid until `expiresAtMillis`.
  public func mint(subject: String, role: Role, topics: [String], expiresAtMillis: Int64) async throws -> String {
    let claims = TokenClaims(
      sub: SubjectClaim(value: subject),
      exp: ExpirationClaim(value: Date(timeIntervalSince1970: Double(expiresAtMillis) / 1000)), role: role, topics: topics)
    return try await keys.sign(claims)
  }

  /// The principal `token` speaks for.
  ///
  /// - Throws: ``RPCError`` UNAUTHENTICATED when there is no token, it does not verify
  ///   (malformed, bad signature, unknown role), it has expired or it is not valid yet (its
  ///   `nbf` more than ``notBeforeSkewMillis`` ahead) — a client should get a new token rather
  ///   than retry.
  public func authenticate(_ token: String?) async throws(RPCError) -> Principal {
    if let principal = try verifiedPrincipal(token) { return principal }
    let result = await withCheckedContinuation { answer in withPrincipal(of: token) { answer.resume(returning: $0) } }
    return try result.get()
  }

  /// Runs `body` with the principal `token` speaks for, or with the UNAUTHENTICATED error
  /// that refuses it (as ``authenticate(_:)``): at once when the token was verified before;
  /// otherwise once its signature is checked — checked once however many bodies wait — and
  /// after every body given for the same token before it, in the order given. The requests of
  /// one connection share its token, so they reach `body` in the order they came, even those
  /// arriving while the check runs: a publish stream's publishes are applied in order. (A
  /// token counts as verified, for ``verifiedPrincipal(_:)`` too, only once the bodies that
  /// waited for its check have run.)
  public func withPrincipal(of presented: String?, _ body: @escaping Waiter) {
    let token: String
    do throws(RPCError) {
      token = try Self.present(presented)
    } catch {
      return body(.failure(error))
    }
    // Swift compares and hashes strings as Unicode text: a token with "K" spelled as the
    // Kelvin sign (U+212A) would be the verified token in these tables, and a copy presented
    // first would have the real one refused. A JWT is ASCII, where text is bytes.
    guard Self.isASCII(token) else {
      return body(.failure(RPCError(code: .unauthenticated, message: "the auth token is not a JWT: it holds bytes that are not ASCII")))
    }
    enum Next { case verified(Principal), rejected(RPCError), waits, checks }
    let next = tokens.withLock { tokens -> Next in
      if let principal = tokens.principal(of: token) { return .verified(principal) }
      if let error = tokens.rejected[token] { return .rejected(error) }
      guard tokens.checking[token] == nil else {
        tokens.checking[token]?.append(body)
        return .waits
      }
      tokens.checking[token] = [body]
      return .checks
    }
    switch next {
    case .verified(let principal): body(valid(principal))
    case .rejected(let error): body(.failure(error))
    case .waits: break
    case .checks: Task { await check(token) }
    }
  }

  /// Checks `token`'s signature, then runs the bodies waiting for it, in order — those that
  /// join while they run as well — and only then counts the token as verified.
  private func check(_ token: String) async {
    let result: Result<Principal, RPCError>
    do {
      let claims = try await keys.verify(token, as: TokenClaims.self)
      // Subscriptions are counted per subject: tokens without one would all share a quota.
      guard !claims.sub.value.isEmpty else { throw RPCError(code: .unauthenticated, message: "the auth token's subject is empty") }
      result = .success(
        Principal(
          subject: claims.sub.value, role: claims.role, topics: claims.topics, expiresAtMillis: Self.millis(claims.exp.value),
          notBeforeMillis: claims.nbf.map { Self.millis($0.value) } ?? .min))
    } catch let error as RPCError {
      result = .failure(error)
    } catch {
      result = .failure(RPCError(code: .unauthenticated, message: "the auth token does not verify: \(error)"))
    }
    while true {
      let waiting = tokens.withLock { tokens -> [Waiter] in
        let waiting = tokens.checking[token] ?? []
        guard waiting.isEmpty else {
          tokens.checking[token] = []
          return waiting
        }
        tokens.checking[token] = nil
        switch result {
        case .success(let principal):
          if tokens.verified.count >= Self.cacheLimit {
            tokens.verified.removeAll(keepingCapacity: true)
            tokens.last = nil
          }
          tokens.verified[token] = principal
        case .failure(let error):
          if tokens.rejected.count >= Self.rejectedLimit { tokens.rejected.removeAll(keepingCapacity: true) }
          tokens.rejected[token] = error
        }
        return []
      }
      guard !waiting.isEmpty else { return }
      for body in waiting { body(result.flatMap(valid)) }
    }
  }

  /// The principal of `token` if it was verified before, without waiting; `nil` when its
  /// signature still has to be checked (``authenticate(_:)`` does that). The hot path of a
  /// connection's calls, which all carry the token verified at its first.
  ///
  /// - Throws: ``RPCError`` UNAUTHENTICATED when there is no token, or it has expired or is
  ///   not valid yet.
  public func verifiedPrincipal(_ token: String?) throws(RPCError) -> Principal? {
    try cached(Self.present(token))
  }

  /// Whether `token` is ASCII, where Swift's string comparisons compare bytes.
  static func isASCII(_ token: String) -> Bool {
    token.utf8.allSatisfy { $0 < 0x80 }
  }

  /// Whether `token` holds the same bytes as `ascii`, a token known to be ASCII (as every
  /// cached one is): equal as Unicode text and as long in UTF-8. A string canonically
  /// equivalent to an ASCII one but spelled otherwise is longer — the only characters that
  /// stand for ASCII ones (U+212A for K, U+037E for ;, U+1FEF for `) take two or three bytes
  /// — and the comparison is at once when both share their storage, as a connection's calls
  /// share its token.
  static func sameBytes(_ token: String, asASCII ascii: String) -> Bool {
    token.utf8.count == ascii.utf8.count && token == ascii
  }

  /// The token, or UNAUTHENTICATED when there is none.
  private static func present(_ token: String?) throws(RPCError) -> String {
    guard let token, !token.isEmpty else {
      throw RPCError(code: .unauthenticated, message: "no auth token: connect with a token (pushline token mints one)")
    }
    return token
  }

  /// The principal of `token` if it was verified before, checked for its validity in time.
  private func cached(_ token: String) throws(RPCError) -> Principal? {
    guard let principal = tokens.withLock({ $0.principal(of: token) }) else { return nil }
    return try valid(principal).get()
  }

  /// `principal`, or UNAUTHENTICATED once its token has expired, or while it is not valid yet
  /// (checked at each use, as expiry: a token used too early is kept, and taken once its time
  /// comes).
  private func valid(_ principal: Principal) -> Result<Principal, RPCError> {
    let now = nowMillis()
    guard principal.expiresAtMillis > now else {
      return .failure(RPCError(code: .unauthenticated, message: "the auth token expired; get a new one"))
    }
    if principal.notBeforeMillis > now {
      let (ahead, overflows) = principal.notBeforeMillis.subtractingReportingOverflow(now)
      guard !overflows, ahead <= Self.notBeforeSkewMillis else {
        return .failure(
          RPCError(code: .unauthenticated, message: "the auth token is not valid until \(principal.notBeforeMillis) ms (its nbf); check the clocks"))
      }
    }
    return .success(principal)
  }

  /// `date` in Unix milliseconds; a date beyond `Int64` milliseconds (some 292 million years
  /// after 1970) is the end of time, as far before, its start.
  private static func millis(_ date: Date) -> Int64 {
    let millis = (date.timeIntervalSince1970 * 1000).rounded()
    return Int64(exactly: millis) ?? (millis > 0 ? .max : .min)
  }
}

/// Why a ``TokenAuthority`` could not be made.
public enum TokenAuthorityError: Error, CustomStringConvertible {
  /// HS256 needs a secret of at least 32 bytes; the count is what was given.
  case secretTooShort(Int)

  public var description: String {
    switch self {
    case .secretTooShort(let count): "the token secret must be at least 32 bytes, got \(count)"
    }
  }
}
