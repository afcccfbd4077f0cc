import PushlineBroker
import PushlineRPC
import PushlineTesting
import Testing

@Suite("Tokens: HS256 JWTs with role, topics and expiry")
struct TokenAuthorityTests {
  let clock = ManualWallClock()
  static let secret = Array("0123456789abcdef0123456789abcdef".utf8)

  @Test func aMintedTokenAuthenticatesAsItsClaims() async throws {
    let authority = try await TokenAuthority(secret: Self.secret, nowMillis: clock.function)
    let token = try await authority.mint(subject: "driver-42", role: .subscriber, topics: ["driver/42", "broadcast/*"], expiresAtMillis: clock.now + 60_000)
    let principal = try await authority.authenticate(token)
    #expect(principal == Principal(subject: "driver-42", role: .subscriber, topics: ["driver/42", "broadcast/*"], expiresAtMillis: clock.now + 60_000))
    #expect(principal.covers("driver/42") && principal.covers("broadcast/city/7") && !principal.covers("driver/43"))
  }

  @Test func missingForgedGarbledAndExpiredTokensAreUnauthenticated() async throws {
    let authority = try await TokenAuthority(secret: Self.secret, nowMillis: clock.function)
    let other = try await TokenAuthority(secret: Array(repeating: 7, count: 32), nowMillis: clock.function)
    let forged = try await other.mint(subject: "x", role: .admin, topics: ["*"], expiresAtMillis: clock.now + 60_000)
    let expiring = try await authority.mint(subject: "x", role: .admin, topics: ["*"], expiresAtMillis: clock.now + 1_000)
    await expectStatus(.unauthenticated) { try await authority.authenticate(nil) }
    await expectStatus(.unauthenticated) { try await authority.authenticate("") }
    await expectStatus(.unauthenticated) { try await authority.authenticate("not.a.jwt") }
    await expectStatus(.unauthenticated) { try await authority.authenticate(forged) }
    _ = try await authority.authenticate(expiring)
    clock.advance(by: .seconds(1))
    await expectStatus(.unauthenticated) { try await authority.authenticate(expiring) }  // also once cached
  }

  @Test func aShortSecretIsRefused() async throws {
    await #expect(throws: TokenAuthorityError.self) { try await TokenAuthority(secret: Array("short".utf8), nowMillis: clock.function) }
  }
}
