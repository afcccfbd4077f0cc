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
  func established() async throws
}

extension TrackerSession {
  /// A session that exists only once its connection is accepted (in process, in tests).
  public func established() async throws {}
}

/// Opens sessions: connects, runs `body` with the live session, and disconnects when it returns.
public protocol TrackerConnector: Sendable {
  func withSession(_ body: (any TrackerSession) async throws -> Void) async throws
}
