import Foundation

/// The system's wall clock in Unix milliseconds — the default wherever time is injected
/// (the broker, the client), so that tests can put their own in its place.
public enum WallClock {
  /// Now, in milliseconds since the Unix epoch.
  public static let systemMillis: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }
}
