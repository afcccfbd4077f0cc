import JWTKit

/// The claims of a Pushline token: who (`sub`), until when (`exp`), from when if it says so
/// (`nbf`), as what (`role`) and on which topics (`topics`, exact names or prefixes ending in
/// `*`).
struct TokenClaims: JWTPayload {
  var sub: SubjectClaim
  var exp: ExpirationClaim
  /// Absent from the tokens ``TokenAuthority/mint(subject:role:topics:expiresAtMillis:)`` makes;
  /// other issuers may set it.
  var nbf: NotBeforeClaim?
  var role: Role
  var topics: [String]

  /// Expiry and not-before are checked by ``TokenAuthority`` against the broker's clock, not
  /// here, so that tests with an injected clock are exact.
  func verify(using algorithm: some JWTAlgorithm) throws {}
}
