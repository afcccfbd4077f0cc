public import PushlineBroker
public import PushlineClient
import PushlineSchema

/// The client core connected straight to a ``Broker`` in the same process — no sockets, no
/// codec — so that apps and tests can run the whole pipeline deterministically and fast.
/// Each session subscribes as `principal`, with the broker's own authorization and statuses.
public struct InProcessTrackerConnector: TrackerConnector {
  public var broker: Broker
  public var principal: Principal

  /// A connector to `broker` acting as `principal`.
  public init(broker: Broker, principal: Principal) {
    self.broker = broker
    self.principal = principal
  }

  public func withSession(_ body: (any TrackerSession) async throws -> Void) async throws {
    try await body(Session(broker: broker, principal: principal))
  }

  struct Session: TrackerSession {
    var broker: Broker
    var principal: Principal

    func cards(in topic: String) async throws -> TopicUpdate { try TopicUpdate(decoding: broker.cards(in: topic, for: principal)) }

    func updates(from positions: [TopicPosition]) -> AsyncThrowingStream<TopicUpdate, any Error> {
      AsyncThrowingStream { continuation in
        let task = Task { [broker, principal] in
          do {
            let subscription = try broker.subscribe(SubscribeRequest(topics: positions), for: principal)
            defer { broker.unsubscribe(subscription) }
            while true {
              for update in try await broker.nextUpdates(for: subscription) { continuation.yield(try TopicUpdate(decoding: update)) }
            }
          } catch {
            continuation.finish(throwing: error)
          }
        }
        continuation.onTermination = { _ in task.cancel() }
      }
    }
  }
}
