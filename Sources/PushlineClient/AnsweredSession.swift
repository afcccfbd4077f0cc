import PushlineSchema

/// A session that tells when the broker first answers one of its calls: a snapshot pulled, or
/// a stream's first update (a subscription's first update comes at once, PROTOCOL.md 3.3).
/// The connection manager resets its backoff only then, not at the handshake: a broker that
/// accepts connections but refuses every call (a full subscription quota, a storage outage)
/// would otherwise be retried at the first, shortest delay forever.
struct AnsweredSession: TrackerSession {
  let session: any TrackerSession
  /// Called on each answer; cheap, and safe from any task.
  let answered: @Sendable () -> Void

  func cards(in topic: String) async throws -> TopicUpdate {
    let snapshot = try await session.cards(in: topic)
    answered()
    return snapshot
  }

  func updates(from positions: [TopicPosition]) -> AsyncThrowingStream<TopicUpdate, any Error> {
    .relaying(session.updates(from: positions)) { _ in answered() }
  }

  func established() async throws -> Int64? { try await session.established() }
}
