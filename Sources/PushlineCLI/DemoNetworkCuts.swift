import PushlineClient
import PushlineSchema
import Synchronization

/// The demo's flaky network: each session's streams are cut after `liveFor`, and the network
/// then stays down for `downFor` (connecting fails), so the watcher shows stale labels and
/// then a seamless resume.
struct DemoNetworkCuts: TrackerConnector {
  struct Cut: Error, CustomStringConvertible {
    var description: String
  }

  var inner: any TrackerConnector
  var liveFor: Duration
  var downFor: Duration
  private let downUntil = DownUntil()

  init(inner: any TrackerConnector, liveFor: Duration, downFor: Duration) {
    self.inner = inner
    self.liveFor = liveFor
    self.downFor = downFor
  }

  func withSession(_ body: (any TrackerSession) async throws -> Void) async throws {
    let clock = ContinuousClock()
    if let until = downUntil.instant.withLock({ $0 }), clock.now < until {
      throw Cut(description: "network unreachable (the demo's outage)")
    }
    let cutAt = clock.now + liveFor
    try await inner.withSession { session in
      try await body(CutSession(inner: session, cutAt: cutAt, downFor: downFor, downUntil: downUntil))
    }
  }

  /// A session whose streams fail at `cutAt`, as if the network had gone.
  struct CutSession: TrackerSession {
    var inner: any TrackerSession
    var cutAt: ContinuousClock.Instant
    var downFor: Duration
    var downUntil: DownUntil

    func cards(in topic: String) async throws -> TopicUpdate { try await inner.cards(in: topic) }

    func established() async throws -> Int64? { try await inner.established() }

    func updates(from positions: [TopicPosition]) -> AsyncThrowingStream<TopicUpdate, any Error> {
      let upstream = inner.updates(from: positions)
      return AsyncThrowingStream { continuation in
        let forward = Task {
          do {
            for try await update in upstream { continuation.yield(update) }
            continuation.finish()
          } catch {
            continuation.finish(throwing: error)
          }
        }
        let cut = Task { [cutAt, downFor, downUntil] in
          try await Task.sleep(until: cutAt)
          downUntil.instant.withLock { $0 = cutAt + downFor }
          continuation.finish(throwing: Cut(description: "connection cut by the demo"))
          forward.cancel()
        }
        continuation.onTermination = { _ in
          forward.cancel()
          cut.cancel()
        }
      }
    }
  }

  final class DownUntil: Sendable {
    let instant = Mutex<ContinuousClock.Instant?>(nil)
  }
}
