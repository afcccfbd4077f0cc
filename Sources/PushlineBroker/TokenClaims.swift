import JWTKit

/// The claims of a Pushline token: who (`sub`), until when (`exp`), as what (`role`) and on
/// which topics (`topics`, exact names or prefixes ending in `*`).
struct TokenClaims: JWTPayload {
  var sub: SubjectClaim
  var exp: ExpirationClaim
  var role: Role
  var topics: [String]

  /// Expiry is checked by ``TokenAuthority`` against the broker's clock, not here, so that
  /// tests with an injected clock are exact.
  func verify(using algorithm: some JWTAlgorithm) throws {}
}
