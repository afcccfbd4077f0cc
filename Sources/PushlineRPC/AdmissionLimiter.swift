import Synchronization

/// A token bucket on arrivals that are expensive when they all come at once: after a restart
/// or a network blip every client comes back in the same second, and each connection costs a
/// handshake, each subscription a catch-up or a snapshot. Past the rate an arrival is refused
/// with UNAVAILABLE and a retry-after hint — when a token will be there, times a random 1–2 —
/// so the storm spreads itself out instead of piling up.
public final class AdmissionLimiter: Sendable {
  private struct Bucket {
    var tokens: Double
    var refilledAtMillis: Int64
  }

  private let ratePerSecond: Double
  private let burst: Double
  private let refusal: String
  private let bucket: Mutex<Bucket>

  /// A limiter admitting `ratePerSecond` on average and `burst` at once, whose refusals say
  /// `refusal`; a rate of 0 or less admits everything.
  public init(ratePerSecond: Double, burst: Int, refusal: String, nowMillis: Int64) {
    self.ratePerSecond = ratePerSecond
    self.burst = Double(max(burst, 1))
    self.refusal = refusal
    bucket = Mutex(Bucket(tokens: Double(max(burst, 1)), refilledAtMillis: nowMillis))
  }

  /// Takes a token, or throws UNAVAILABLE saying when to come back.
  public func admit(nowMillis: Int64) throws(RPCError) {
    guard ratePerSecond > 0 else { return }
    let wait = bucket.withLock { bucket -> Double? in
      let elapsed = Double(max(0, nowMillis - bucket.refilledAtMillis)) / 1000
      bucket.tokens = min(burst, bucket.tokens + elapsed * ratePerSecond)
      bucket.refilledAtMillis = nowMillis
      guard bucket.tokens < 1 else {
        bucket.tokens -= 1
        return nil
      }
      return (1 - bucket.tokens) / ratePerSecond
    }
    guard let wait else { return }
    let millis = wait * 1000 * Double.random(in: 1...2)  // jitter: not everyone back at the same instant
    throw RPCError(code: .unavailable, message: refusal, retryAfterMillis: UInt32(min(millis.rounded(.up), 60_000)))
  }
}
