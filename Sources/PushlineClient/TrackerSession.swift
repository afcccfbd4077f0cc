public import PushlineSchema

/// One live connection to the broker, as the client core uses it: pull a topic's snapshot,
/// or stream a set of topics from their positions. The transport (Pushline RPC over TCP,
/// or anything a test provides) implements it.
public protocol TrackerSession: Sendable {
  /// The topic's snapshot (`/pushline.Tracker/GetCards`).
  func cards(in topic: String) async throws -> TopicUpdate
  /// The topics' updates from `positions` on (`/pushline.Tracker/Subscribe`); the stream
  /// throws the call's error when it ends.
  func updates(from positions: [TopicPosition]) -> AsyncThrowingStream<TopicUpdate, any Error>
  /// Returns once the broker has accepted the connection (its handshake), or throws why not: a
  /// transport may send the first calls before that, so a session is not live until then.
  /// Returns the broker's clock at the handshake, in Unix milliseconds, when the transport
  /// learns it there: the tracker corrects its own clock with it before any update arrives.
  func established() async throws -> Int64?
}

extension TrackerSession {
  /// A session that exists only once its connection is accepted (in process, in tests), with
  /// no handshake to tell the broker's clock.
  public func established() async throws -> Int64? { nil }
}

/// Opens sessions: connects, runs `body` with the live session, and disconnects when it returns.
public protocol TrackerConnector: Sendable {
  func withSession(_ body: (any TrackerSession) async throws -> Void) async throws
}
