import Synchronization

/// A token bucket on arrivals that are expensive when they all come at once: after a restart
/// or a network blip every client comes back in the same second, and each connection costs a
/// handshake, each subscription a catch-up or a snapshot.
///
/// Past the rate an arrival is refused with UNAVAILABLE and a retry-after hint that reserves it
/// a slot, as GCRA does: each refusal's slot is one admission interval (1/rate) after the
/// previous refusal's, or when the next token exists if that is later. So the hints grow with
/// the backlog: arrivals refused in the same instant are told to come back spread over the time
/// the limiter needs to admit them (N refusals over N/rate seconds), each times a random 1–2 so
/// that neighbours are not in lockstep either, instead of all being told "when the next token
/// exists" and coming back together. Slots go at most ``maxSlotAheadMillis`` ahead; past that
/// a refusal is told that, times the jitter (at most a minute). A slot is not held for its
/// client: admission takes tokens only, so refusals never slow admission down, and a client
/// that comes back to find no token (another arrival took it) is given a later slot.
public final class AdmissionLimiter: Sendable {
  private struct Bucket {
    var tokens: Double
    var refilledAtMillis: Int64
    /// The slot the next refusal reserves, at the earliest: one interval after the last one's.
    var nextSlotMillis: Double
  }

  /// How far ahead of the present refusals reserve slots, in milliseconds: at 10,000 arrivals
  /// a second, a backlog of 300,000.
  public static let maxSlotAheadMillis = 30_000.0

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
    bucket = Mutex(Bucket(tokens: Double(max(burst, 1)), refilledAtMillis: nowMillis, nextSlotMillis: Double(nowMillis)))
  }

  /// Takes a token, or throws UNAVAILABLE saying when to come back (the slot it reserves).
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
      let (now, interval) = (Double(nowMillis), 1000 / ratePerSecond)
      let nextToken = now + (1 - bucket.tokens) * interval
      let slot = min(max(bucket.nextSlotMillis, nextToken), now + Self.maxSlotAheadMillis)
      bucket.nextSlotMillis = slot + interval
      return slot - now
    }
    guard let wait else { return }
    let millis = wait * Double.random(in: 1...2)  // jitter: neighbouring slots not back at the same instant
    throw RPCError(
      code: .unavailable, message: refusal, retryAfterMillis: UInt32(min(millis.rounded(.up), 2 * Self.maxSlotAheadMillis)))
  }
}
