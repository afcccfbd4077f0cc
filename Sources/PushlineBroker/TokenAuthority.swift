import Foundation
import JWTKit
public import PushlineRPC
import Synchronization

/// Mints and verifies the broker's tokens: JWTs signed with HS256 and a shared secret, which
/// comes from configuration or the environment, never from code.
public final class TokenAuthority: Sendable {
  private let keys: JWTKeyCollection
  private let nowMillis: @Sendable () -> Int64
  /// Verified tokens, so that a connection's calls do not each pay for a signature check.
  private let verified = Mutex<[String: Principal]>([:])
  private static let cacheLimit = 10_000

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
  ///   (malformed, bad signature, unknown role) or it has expired — a client should get a new
  ///   token rather than retry.
  public func authenticate(_ token: String?) async throws(RPCError) -> Principal {
    let token = try Self.present(token)
    if let principal = try cached(token) { return principal }
    let principal: Principal
    do {
      let claims = try await keys.verify(token, as: TokenClaims.self)
      principal = Principal(
        subject: claims.sub.value, role: claims.role, topics: claims.topics,
        expiresAtMillis: Int64((claims.exp.value.timeIntervalSince1970 * 1000).rounded()))
    } catch {
      throw RPCError(code: .unauthenticated, message: "the auth token does not verify: \(error)")
    }
    verified.withLock { cache in
      if cache.count >= Self.cacheLimit { cache.removeAll(keepingCapacity: true) }
      cache[token] = principal
    }
    return try unexpired(principal)
  }

  /// The principal of `token` if it was verified before, without waiting; `nil` when its
  /// signature still has to be checked (``authenticate(_:)`` does that). The hot path of a
  /// connection's calls, which all carry the token verified at its first.
  ///
  /// - Throws: ``RPCError`` UNAUTHENTICATED when there is no token or it has expired.
  public func verifiedPrincipal(_ token: String?) throws(RPCError) -> Principal? {
    try cached(Self.present(token))
  }

  /// The token, or UNAUTHENTICATED when there is none.
  private static func present(_ token: String?) throws(RPCError) -> String {
    guard let token, !token.isEmpty else {
      throw RPCError(code: .unauthenticated, message: "no auth token: connect with a token (pushline token mints one)")
    }
    return token
  }

  /// The principal of `token` if it was verified before, checked for expiry.
  private func cached(_ token: String) throws(RPCError) -> Principal? {
    guard let principal = verified.withLock({ $0[token] }) else { return nil }
    return try unexpired(principal)
  }

  private func unexpired(_ principal: Principal) throws(RPCError) -> Principal {
    guard principal.expiresAtMillis > nowMillis() else {
      throw RPCError(code: .unauthenticated, message: "the auth token expired; get a new one")
    }
    return principal
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
