/// The responses of a server stream, pulled by the transport whenever the connection can take
/// more bytes — for a handler whose responses come from elsewhere (the broker's fan-out), so
/// that a response costs no task switch and no suspension of the handler.
///
/// Called only on the transport's own executor (a connection's event loop), one call at a time.
public protocol ResponseSource: AnyObject, Sendable {
  /// The next responses to send, encoded; empty when there is nothing to send now (the source
  /// then calls its pump's ``ResponsePump/wake()`` when there is).
  func nextResponses() -> [[UInt8]]

  /// The connection sent its shutdown GOAWAY: a stream that never ends by itself (a
  /// subscription) should end now, so that its client reconnects — to another server, or to
  /// this one restarted — while the lame-duck period spreads the goaways over time. Called once.
  func connectionIsGoingAway()
}

extension ResponseSource {
  /// Does nothing: a stream that ends by itself finishes within the shutdown's grace period.
  public func connectionIsGoingAway() {}
}

/// Tells the transport that a ``ResponseSource`` has responses to send.
public protocol ResponsePump: Sendable {
  /// Asks the transport to pull from the source soon, on its own executor; cheap and safe to
  /// call from any thread, and as often as wanted (wakes before the pull are merged).
  func wake()
}
