import Foundation

/// The system's wall clock in Unix milliseconds — the default wherever time is injected
/// (the broker, the client), so that tests can put their own in its place.
public enum WallClock {
  /// Now, in milliseconds since the Unix epoch. (Read straight from the system: the broker
  /// reads it for every publish, and `Date` costs several times the clock's own read.)
  public static let systemMillis: @Sendable () -> Int64 = {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
  }
}
