import PushlineRPC
import Testing

/// The limiter's clock is the `nowMillis` each arrival passes: these tests run a storm in one
/// instant and in milliseconds chosen by hand.
@Suite("Admission limiter")
struct AdmissionLimiterTests {
  /// The retry-after hint of an arrival at `nowMillis`, or nil when it is admitted.
  static func hint(_ limiter: AdmissionLimiter, at nowMillis: Int64) -> UInt32? {
    do throws(RPCError) {
      try limiter.admit(nowMillis: nowMillis)
      return nil
    } catch {
      #expect(error.code == .unavailable)
      return error.retryAfterMillis
    }
  }

  /// At 100 a second, 1,000 arrivals refused in one instant need ten seconds to be admitted:
  /// the k-th is told k × 10 ms, times the 1–2 jitter — not all "in 10 ms", which would bring
  /// the whole storm back together.
  @Test func refusalsInOneInstantAreSpreadOverTheTimeToAdmitThem() throws {
    let limiter = AdmissionLimiter(ratePerSecond: 100, burst: 1, refusal: "busy", nowMillis: 0)
    #expect(Self.hint(limiter, at: 0) == nil)
    var hints: [Int] = []
    for _ in 1...1000 { hints.append(Int(try #require(Self.hint(limiter, at: 0)))) }
    for (index, hint) in hints.enumerated() {
      let slot = 10 * (index + 1)
      #expect((slot...2 * slot).contains(hint), "refusal \(index + 1): \(hint) ms")
    }
    #expect(hints.enumerated().contains { $1 != 10 * ($0 + 1) })  // jittered
  }

  /// Slots go at most 30 s ahead: past that, refusals are told 30–60 s. Refusals take no
  /// tokens: the limiter still admits at its rate meanwhile.
  @Test func slotsGoNoFurtherThanTheCapAndRefusalsTakeNoTokens() throws {
    let limiter = AdmissionLimiter(ratePerSecond: 100, burst: 1, refusal: "busy", nowMillis: 0)
    #expect(Self.hint(limiter, at: 0) == nil)
    for _ in 0..<3000 { _ = Self.hint(limiter, at: 0) }
    for _ in 0..<100 {
      let hint = try #require(Self.hint(limiter, at: 0))
      #expect((30_000...60_000).contains(hint))
    }
    #expect(Self.hint(limiter, at: 10) == nil)
    #expect(Self.hint(limiter, at: 20) == nil)
  }

  /// A rate of 0 is no limit.
  @Test func aRateOfZeroAdmitsEverything() {
    let limiter = AdmissionLimiter(ratePerSecond: 0, burst: 0, refusal: "busy", nowMillis: 0)
    for _ in 0..<10_000 { #expect(Self.hint(limiter, at: 0) == nil) }
  }
}
