import Synchronization

/// A wall clock in Unix milliseconds that moves only when the test says so — inject
/// ``function`` wherever Pushline takes a `nowMillis` clock (the broker, the token authority,
/// the client core), and expiry, watermarks and staleness happen exactly when the test
/// advances it.
public final class ManualWallClock: Sendable {
  private let millis: Mutex<Int64>

  /// A clock showing `startMillis` (by default a fixed instant in 2027).
  public init(_ startMillis: Int64 = 1_800_000_000_000) { millis = Mutex(startMillis) }

  /// The time now, in Unix milliseconds.
  public var now: Int64 { millis.withLock { $0 } }

  /// Moves the clock forward by `duration`.
  public func advance(by duration: Duration) {
    let (seconds, attoseconds) = duration.components
    millis.withLock { $0 += seconds * 1000 + attoseconds / 1_000_000_000_000_000 }
  }

  /// The clock as the closure Pushline's configurations take.
  public var function: @Sendable () -> Int64 { { self.now } }
}
