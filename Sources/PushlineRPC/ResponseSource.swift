/// The responses of a server stream, pulled by the transport whenever the connection can take
/// more bytes — for a handler whose responses come from elsewhere (the broker's fan-out), so
/// that a response costs no task switch and no suspension of the handler. Once a handler has
/// handed its stream to a source it may return: the stream needs no task of its own.
///
/// Called only on the transport's own executor (a connection's event loop), one call at a time.
public protocol ResponseSource: AnyObject, Sendable {
  /// Appends the responses to send now to `batch` — none when there is nothing to send (the
  /// source then calls its pump's ``ResponsePump/wake()`` when there is) — and calls
  /// ``ResponseBatch/endStream()`` when the stream is complete, which ends the call with OK once
  /// they are sent.
  ///
  /// The batch holds the connection's outgoing bytes while the source appends: the source must
  /// not write to the stream's connection by other means meanwhile.
  ///
  /// - Throws: the ``RPCError`` that ends the call; what was appended before is not sent.
  func nextResponses(into batch: inout ResponseBatch) throws(RPCError)

  /// Whether a pull now could find more: after writing a batch, the transport pulls again only
  /// if so — a source that wakes its pump whenever it gains something says `false` once it has
  /// handed out all it holds, and saves its stream an empty pull per batch.
  var hasMoreResponses: Bool { get }

  /// The connection sent its shutdown GOAWAY: a stream that never ends by itself (a
  /// subscription) should end now — the transport pulls next, as soon as the connection takes
  /// bytes — so that its client reconnects, to another server or to this one restarted, while
  /// the lame-duck period spreads the goaways over time. Called at most once.
  func connectionIsGoingAway()

  /// The connection stopped taking bytes (`false`: what the source holds stays with it until
  /// the connection takes bytes again) or takes them again (`true`). Called on changes only,
  /// first when the transport first pulls: a source that can merge what it holds (the
  /// broker's queue, coalescing a card's versions) need only merge while it waits.
  func connectionWritabilityChanged(_ isWritable: Bool)

  /// The call is over — its status sent, or the client cancelled, its deadline passed, the
  /// connection closed: let go of what the stream holds. Called once, whoever ended the call.
  func streamEnded()
}

extension ResponseSource {
  /// Always `true`: the transport pulls again after every batch until one comes back empty.
  public var hasMoreResponses: Bool { true }

  /// Does nothing: a stream that ends by itself finishes within the shutdown's grace period.
  public func connectionIsGoingAway() {}

  /// Does nothing: a source whose responses are what they are sends them when it can.
  public func connectionWritabilityChanged(_ isWritable: Bool) {}

  /// Does nothing: a source that holds nothing beyond its call has nothing to let go of.
  public func streamEnded() {}
}

/// Tells the transport that a ``ResponseSource`` has responses to send.
public protocol ResponsePump: Sendable {
  /// Asks the transport to pull from the source soon, on its own executor; cheap and safe to
  /// call from any thread, and as often as wanted (wakes before the pull are merged).
  func wake()
}
