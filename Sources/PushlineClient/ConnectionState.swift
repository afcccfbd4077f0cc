/// The client's link to the broker, as the UI shows it.
public struct ConnectionState: Hashable, Sendable {
  /// What the connection manager is doing.
  public enum Phase: Hashable, Sendable {
    /// Not started yet.
    case idle
    /// Connecting, or connected and waiting for the broker to answer every subscription (the
    /// attempt counts from 1 since the last live connection).
    case connecting(attempt: Int)
    /// Subscribed and receiving: the broker has answered every service's subscription of the
    /// session (a handshake alone, which a broker refusing every call completes, is not live).
    case live
    /// Waiting before the next attempt, until this time (Unix milliseconds).
    case backingOff(untilMillis: Int64, reason: String)
    /// Given up for good: the broker refused the token or the topics, or the manager's run
    /// ended (its task cancelled: the reason is "cancelled").
    case stopped(reason: String)
  }

  public var phase: Phase
  /// Since when the client has had no live connection (Unix milliseconds); `nil` while live.
  /// A client started during an outage has been offline since its cache last heard from the
  /// broker, not since it started.
  public var offlineSinceMillis: Int64?

  /// A state.
  public init(phase: Phase = .idle, offlineSinceMillis: Int64? = nil) {
    self.phase = phase
    self.offlineSinceMillis = offlineSinceMillis
  }
}
