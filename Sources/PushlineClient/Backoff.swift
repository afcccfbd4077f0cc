import Foundation
import PushlineRPC

/// Reconnection delays: exponential with full jitter, capped — so a broker restart does not
/// bring every client back in the same instant.
public struct Backoff: Hashable, Sendable {
  /// The ceiling of the first delay.
  public var initial: Duration
  /// No delay is longer.
  public var maximum: Duration
  /// How many times the ceiling before it each ceiling is.
  public var multiplier: Double
  /// The longest retry-after hint honoured: a broker's hint beyond it (a misconfigured
  /// reconnect spread, say) is cut to it, so no hint keeps a client away for hours.
  public var maximumHint: Duration

  /// 250 ms doubling up to 30 s; hints honoured up to 5 minutes.
  public init(
    initial: Duration = .milliseconds(250), maximum: Duration = .seconds(30), multiplier: Double = 2,
    maximumHint: Duration = .seconds(300)
  ) {
    self.initial = initial
    self.maximum = maximum
    self.multiplier = multiplier
    self.maximumHint = maximumHint
  }

  /// The ceiling before the `attempt`th retry (1-based): initial × multiplier^(attempt−1), capped.
  public func ceiling(attempt: Int) -> Duration {
    let seconds = Double(initial.components.seconds) + Double(initial.components.attoseconds) / 1e18
    let maximumSeconds = Double(maximum.components.seconds) + Double(maximum.components.attoseconds) / 1e18
    let scaled = seconds * Foundation.pow(multiplier, Double(max(0, attempt - 1)))
    return .milliseconds(Int64(min(scaled, maximumSeconds) * 1000))
  }

  /// The delay before the `attempt`th retry: uniformly random between zero and the ceiling
  /// ("full jitter"); `unit` gives a number in 0...1.
  public func delay(attempt: Int, unit: Double) -> Duration {
    .milliseconds(Int64((Double(ceiling(attempt: attempt).milliseconds) * min(max(unit, 0), 1)).rounded()))
  }
}
