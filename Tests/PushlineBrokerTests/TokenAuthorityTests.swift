import Dispatch
import Foundation
import JWTKit
@testable import PushlineBroker
import PushlineRPC
import PushlineTesting
import Synchronization
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

  /// A token's expiry is seconds in a JSON number, so a correctly signed one can name a time
  /// past `Int64` milliseconds (some 292 million years): it never expires.
  @Test func anExpiryPastInt64MillisecondsIsNever() async throws {
    let authority = try await TokenAuthority(secret: Self.secret, nowMillis: clock.function)
    let token = try await authority.mint(subject: "s", role: .subscriber, topics: ["*"], expiresAtMillis: .max)
    #expect(try await authority.authenticate(token).expiresAtMillis == .max)
  }

  /// A token that did not verify is refused at once the next time — no second signature
  /// check, no task — so a peer repeating it on call after call costs a lookup each.
  @Test func aRejectedTokenIsRefusedAtOnceAfterItsCheck() async throws {
    let authority = try await TokenAuthority(secret: Self.secret, nowMillis: clock.function)
    let forged = try await TokenAuthority(secret: Array(repeating: 7, count: 32), nowMillis: clock.function)
      .mint(subject: "x", role: .admin, topics: ["*"], expiresAtMillis: clock.now + 60_000)
    await expectStatus(.unauthenticated) { try await authority.authenticate(forged) }
    let answered = Mutex<Result<Principal, RPCError>?>(nil)
    authority.withPrincipal(of: forged) { result in answered.withLock { $0 = result } }
    let answer = try #require(answered.withLock { $0 })  // given before withPrincipal returned
    #expect(throws: RPCError.self) { try answer.get() }
  }

  /// A token with an empty subject is refused: subscriptions are counted per subject, and
  /// such tokens (from another issuer; `pushline token` mints none) would share one quota.
  @Test func aTokenWithAnEmptySubjectIsRefused() async throws {
    let authority = try await TokenAuthority(secret: Self.secret, nowMillis: clock.function)
    let token = try await authority.mint(subject: "", role: .subscriber, topics: ["*"], expiresAtMillis: clock.now + 60_000)
    let error = await #expect(throws: RPCError.self) { try await authority.authenticate(token) }
    #expect(error?.code == .unauthenticated && error?.message == "the auth token's subject is empty")
  }

  /// A token is its bytes: one with a "K" spelled as the Kelvin sign, equal to it as Swift
  /// text, neither takes the verified token's place nor, presented first, has it refused.
  @Test func aTokenEqualOnlyAsUnicodeTextIsAnotherToken() async throws {
    let authority = try await TokenAuthority(secret: Self.secret, nowMillis: clock.function)
    var token = ""
    for index in 0..<100 where !token.contains("K") {
      token = try await authority.mint(subject: "s\(index)", role: .subscriber, topics: ["*"], expiresAtMillis: clock.now + 60_000)
    }
    let kelvin = try #require(token.firstRange(of: "K").map { token.replacingCharacters(in: $0, with: "\u{212A}") })
    #expect(kelvin == token)  // as Swift compares strings
    await expectStatus(.unauthenticated) { try await authority.authenticate(kelvin) }
    #expect(try await authority.authenticate(token).subject.hasPrefix("s"))
    #expect(try authority.verifiedPrincipal(kelvin) == nil)  // not the verified one: checked, and refused
    await expectStatus(.unauthenticated) { try await authority.authenticate(kelvin) }
  }

  /// A token whose `nbf` is more than a minute ahead of the broker's clock is refused, as an
  /// expired one is; within the minute (clocks differ a little), or past, it is taken — the
  /// same token, once its time comes, though it was refused before.
  @Test func aTokenIsRefusedUntilItsNotBeforeLessAMinute() async throws {
    let authority = try await TokenAuthority(secret: Self.secret, nowMillis: clock.function)
    let early = try await Self.sign(claims(notBeforeMillis: clock.now + 61_000))
    await expectStatus(.unauthenticated) { try await authority.authenticate(early) }
    await expectStatus(.unauthenticated) { try await authority.authenticate(early) }  // also once cached
    clock.advance(by: .seconds(1))
    #expect(try await authority.authenticate(early).notBeforeMillis == clock.now + 60_000)
    let past = try await Self.sign(claims(notBeforeMillis: clock.now - 1_000))
    #expect(try await authority.authenticate(past).subject == "s")
  }

  /// A token whose header says `alg: none`, with an empty signature, does not verify: the
  /// broker checks every token with its HS256 key, whatever the header says.
  @Test func anUnsignedTokenIsRefused() async throws {
    let authority = try await TokenAuthority(secret: Self.secret, nowMillis: clock.function)
    let unsigned = try await Self.sign(claims(notBeforeMillis: nil), with: JWTKeyCollection().addUnsecuredNone())
    let header = String(try #require(unsigned.split(separator: ".").first))
    let padded = header + String(repeating: "=", count: (4 - header.count % 4) % 4)  // no URL-only characters in JSON this short
    let json = String(decoding: try #require(Data(base64Encoded: padded)), as: UTF8.self)
    #expect(unsigned.hasSuffix(".") && json.contains(#""alg":"none""#))
    await expectStatus(.unauthenticated) { try await authority.authenticate(unsigned) }
  }

  /// A topic claim without `*` covers that topic only, not the names it begins; with `*` it
  /// covers every name it begins, itself included.
  @Test func aClaimCoversAPrefixOnlyWithItsStar() {
    let exact = principal(.subscriber, ["driver/4"])
    #expect(exact.covers("driver/4") && !exact.covers("driver/42") && !exact.covers("driver/4/x"))
    let prefix = principal(.subscriber, ["driver/4*"])
    #expect(prefix.covers("driver/4") && prefix.covers("driver/42") && !prefix.covers("driver/5"))
  }

  /// Claims `mint` would make for an admin `s`, an hour ahead, with `nbf` if given.
  func claims(notBeforeMillis: Int64?) -> TokenClaims {
    let date = { (millis: Int64) in Date(timeIntervalSince1970: Double(millis) / 1000) }
    return TokenClaims(
      sub: SubjectClaim(value: "s"), exp: ExpirationClaim(value: date(clock.now + 3_600_000)),
      nbf: notBeforeMillis.map { NotBeforeClaim(value: date($0)) }, role: .admin, topics: ["*"])
  }

  /// `claims` signed with `keys`, by default the tests' secret: tokens `mint` does not make.
  static func sign(_ claims: TokenClaims, with keys: JWTKeyCollection? = nil) async throws -> String {
    if let keys { return try await keys.sign(claims) }
    return try await JWTKeyCollection().add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256).sign(claims)
  }

  @Test func aShortSecretIsRefused() async throws {
    await #expect(throws: TokenAuthorityError.self) { try await TokenAuthority(secret: Array("short".utf8), nowMillis: clock.function) }
  }

  /// Bodies given for a token while its signature is checked run in the order given, and the
  /// token counts as verified only once they have run: a body given later, on the fast path,
  /// never overtakes one still waiting. (The requests of one connection reach the broker in
  /// the order they came.)
  @Test(.timeLimit(.minutes(1))) func bodiesWaitingForATokensCheckRunInOrderAndAreNotOvertaken() async throws {
    let authority = try await TokenAuthority(secret: Self.secret, nowMillis: { 1_000 })
    let token = try await authority.mint(subject: "s", role: .publisher, topics: ["*"], expiresAtMillis: 1_000_000)
    let order = Mutex<[Int]>([])
    let (firstRuns, firstRan) = AsyncStream<Void>.makeStream()
    let release = DispatchSemaphore(value: 0)
    let (done, finished) = AsyncStream<Void>.makeStream()
    let count = 200
    for index in 0..<count {
      if index == count / 2 {
        // The check is over and the first body runs — held there until every body is given.
        for await _ in firstRuns { break }
      }
      // As a publish does: the fast path when the token is verified, else wait for its check.
      if try authority.verifiedPrincipal(token) != nil {
        order.withLock { $0.append(index) }
        if index == count - 1 { finished.yield() }
        continue
      }
      authority.withPrincipal(of: token) { result in
        #expect((try? result.get())?.subject == "s")
        if index == 0 {
          firstRan.yield()
          _ = release.wait(timeout: .now() + 30)
        }
        order.withLock { $0.append(index) }
        if index == count - 1 { finished.yield() }
      }
    }
    release.signal()
    for await _ in done { break }
    #expect(order.withLock { $0 } == Array(0..<count))
  }
}
