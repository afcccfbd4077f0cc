public import PushlineRPC
import Synchronization

/// Keeps the client connected: connects, runs every service's pull-and-push in the session,
/// and on any loss reconnects after an exponential, jittered backoff, each topic resuming from
/// its cached position. The connection is live once the broker has answered every service's
/// subscription in the session (its first update applied), not at the handshake, which a
/// broker refusing every call still completes: until then the client stays offline, and its
/// cards go stale counting from when it went offline. The backoff starts over only after a
/// session that went live and then lost its connection (UNAVAILABLE, or a stream's end), so a
/// broker that accepts connections but refuses every call, or only one topic's subscription,
/// or refuses a stream after answering it (a card larger than the client's message limit), is
/// retried ever more slowly, while a live connection that drops is retried at once; a
/// retry-after hint the broker gives is honoured up to
/// ``Backoff/maximumHint``. It stops for good only when the broker refuses the token, the
/// topics or the protocol version (statuses that a retry cannot fix), or when its task is
/// cancelled; either way its state ends stopped. Its state reaches the tracker (and so the UI).
public final class ConnectionManager: Sendable {
  /// The state streams of ``stateUpdates()``, until ``run()`` ends and finishes them.
  private struct Observers {
    var streams: [Int: AsyncStream<ConnectionState>.Continuation] = [:]
    var next = 0
    /// `run()` has ended: a stream asked for now gets the final state and ends.
    var isFinished = false
  }

  private let connector: any TrackerConnector
  private let services: [ServiceDataManager]
  private let tracker: TrackerDataManager
  private let backoff: Backoff
  private let nowMillis: @Sendable () -> Int64
  private let sleep: @Sendable (Duration) async throws -> Void
  private let unitRandom: @Sendable () -> Double
  private let state: Mutex<ConnectionState>
  private let observers = Mutex(Observers())

  /// A manager feeding `tracker` with `services`' cards through `connector`, starting from the
  /// tracker's connection state (offline since its cache last heard from the broker, when it
  /// knows). `sleep` and `unitRandom` are injectable so tests control time and jitter.
  public init(
    connector: any TrackerConnector, services: [ServiceDataManager], tracker: TrackerDataManager, backoff: Backoff = Backoff(),
    nowMillis: @escaping @Sendable () -> Int64 = WallClock.systemMillis,
    sleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) },
    unitRandom: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }
  ) {
    self.connector = connector
    self.services = services
    self.tracker = tracker
    self.backoff = backoff
    self.nowMillis = nowMillis
    self.sleep = sleep
    self.unitRandom = unitRandom
    state = Mutex(tracker.modes.connection)
  }

  /// The state now.
  public var connectionState: ConnectionState { state.withLock { $0 } }

  /// The state as it changes — connecting, live, backing off until T, stopped — each value
  /// with the time the client went offline; starts with the current state. The stream ends
  /// when ``run()`` does, its last value stopped; asked for after that, it holds the final
  /// state alone. A slow consumer gets the latest eight values (the final one among them).
  public func stateUpdates() -> AsyncStream<ConnectionState> {
    let (stream, continuation) = AsyncStream<ConnectionState>.makeStream(bufferingPolicy: .bufferingNewest(8))
    let id = observers.withLock { observers -> Int? in
      continuation.yield(state.withLock { $0 })
      guard !observers.isFinished else { return nil }
      defer { observers.next += 1 }
      observers.streams[observers.next] = continuation
      return observers.next
    }
    guard let id else {
      continuation.finish()
      return stream
    }
    continuation.onTermination = { [weak self] _ in self?.observers.withLock { _ = $0.streams.removeValue(forKey: id) } }
    return stream
  }

  /// Runs until the task is cancelled or the broker refuses the client for good; call it
  /// once. A manager with no services has nothing to keep connected: it stops at once,
  /// without connecting. When it returns, the state is stopped — "cancelled", unless the
  /// broker's refusal or the lack of services stopped it — and every state stream has ended.
  public func run() async {
    defer { finish() }
    guard !services.isEmpty else { return update(.stopped(reason: "no services to keep connected")) }
    var failures = 0  // since the last live session: the backoff's exponent
    var attempts = 0  // connection attempts since the last live session, for people
    while !Task.isCancelled {
      attempts += 1
      update(.connecting(attempt: attempts))
      var retryAfter: Duration = .zero
      var refused = false  // the broker ended the session with a status, not a lost connection
      let reason: String
      let subscribed = Mutex(0)  // the services whose subscription the broker answered
      do {
        try await connector.withSession { session in
          try await withThrowingTaskGroup(of: Void.self) { group in
            // The services' first calls go out with the handshake; live once the broker has
            // answered every subscription.
            for service in services {
              group.addTask { @Sendable in
                try await service.run(in: session, tracker: self.tracker) {
                  if subscribed.withLock({ $0 += 1; return $0 }) == self.services.count { self.update(.live) }
                }
              }
            }
            if let serverTimeMillis = try await session.established() { tracker.correctClock(serverTimeMillis: serverTimeMillis) }
            defer { group.cancelAll() }
            try await group.next()
          }
        }
        reason = "the broker ended the stream"
      } catch let error as RPCError where [.unauthenticated, .permissionDenied, .invalidArgument, .failedPrecondition].contains(error.code) {
        try? tracker.cache.flush()
        update(.stopped(reason: "\(error)"))
        return
      } catch let error as RPCError {
        reason = "\(error)"
        refused = error.code != .unavailable
        retryAfter = min(.milliseconds(Int64(error.retryAfterMillis ?? 0)), backoff.maximumHint)
      } catch {
        if Task.isCancelled { break }
        reason = "\(error)"
      }
      try? tracker.cache.flush()
      if connectionState.phase == .live {
        attempts = 0
        if !refused { failures = 0 }
      }
      failures += 1
      let delay = max(retryAfter, backoff.delay(attempt: failures, unit: unitRandom()))
      update(.backingOff(untilMillis: nowMillis() + delay.milliseconds, reason: reason))
      do { try await sleep(delay) } catch { break }
    }
    try? tracker.cache.flush()
  }

  private func update(_ phase: ConnectionState.Phase) {
    let now = nowMillis()
    let next = state.withLock { state in
      state.phase = phase
      if phase == .live {
        state.offlineSinceMillis = nil
      } else if state.offlineSinceMillis == nil {
        state.offlineSinceMillis = now
      }
      return state
    }
    tracker.setConnection(next)
    observers.withLock { observers in for observer in observers.streams.values { observer.yield(next) } }
  }

  /// The end of ``run()``: the state stopped (when it is not already), and every state stream
  /// ended — outside the lock, since ending a stream calls its termination handler, which takes it.
  private func finish() {
    if case .stopped = connectionState.phase {} else { update(.stopped(reason: "cancelled")) }
    let streams = observers.withLock { observers in
      defer { (observers.streams, observers.isFinished) = ([:], true) }
      return Array(observers.streams.values)
    }
    for stream in streams { stream.finish() }
  }
}
