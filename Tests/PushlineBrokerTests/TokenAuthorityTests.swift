import Dispatch
import PushlineBroker
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
