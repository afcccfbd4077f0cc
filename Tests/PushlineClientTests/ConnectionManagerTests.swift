import PushlineClient
import PushlineRPC
import PushlineSchema
import Synchronization
import PushlineTesting
import Testing

/// A connector that plays a script, one step per connection attempt, and records what the
/// client asked for.
final class ScriptedConnector: TrackerConnector {
  enum Step: Sendable {
    case refuse(any Error)
    /// Serves GetCards with `snapshot`, streams `updates` (to each subscription those of its
    /// topics), then fails with `error`.
    case serve(snapshot: TopicUpdate?, updates: [TopicUpdate], then: any Error)
    /// Starts a session, whose calls are sent, but whose handshake the broker refuses.
    case refuseHandshake(any Error)
    /// Completes the handshake, then refuses the pull with `pull`, streams `updates`, and fails
    /// with `error`.
    case refusePull(any Error, updates: [TopicUpdate], then: any Error)
    /// Completes the handshake and answers the pulls with empty topics; refuses the
    /// subscription of `topic` with `error` once another subscription has applied its first
    /// update (a ``confirmation(_:)``), which then fails with `error` too.
    case refuseSubscription(to: String, error: any Error)
    /// Completes the handshake, answers the pulls with empty topics and each subscription with
    /// a ``confirmation(_:)``, then sends nothing until the session is cancelled.
    case stayLive
  }

  private let steps: Mutex<[Step]>
  /// The broker's clock each handshake tells, if any.
  let handshakeClock: Int64?
  let requestedPositions = Mutex<[[TopicPosition]]>([])
  let pulls = Mutex(0)

  /// Whether every step has been played.
  var isOver: Bool { steps.withLock { $0.isEmpty } }

  init(_ steps: [Step], handshakeClock: Int64? = nil) {
    self.steps = Mutex(steps)
    self.handshakeClock = handshakeClock
  }

  func withSession(_ body: (any TrackerSession) async throws -> Void) async throws {
    guard let step = steps.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else {
      throw CancellationError()  // the script is over: end the test's run
    }
    switch step {
    case .refuse(let error): throw error
    case .serve(let snapshot, let updates, let error): try await body(Session(connector: self, snapshot: snapshot, updates: updates, error: error))
    case .refuseHandshake(let error):
      // No call is answered on a connection the broker refused.
      try await body(Session(connector: self, snapshot: nil, updates: [], error: error, handshakeError: error, pullError: error))
    case .refusePull(let pullError, let updates, let error):
      try await body(Session(connector: self, snapshot: nil, updates: updates, error: error, pullError: pullError))
    case .refuseSubscription(let topic, let error):
      try await body(Session(connector: self, snapshot: nil, updates: [], error: error, refusal: Refusal(topic: topic, error: error)))
    case .stayLive: try await body(Session(connector: self, snapshot: nil, updates: [], error: CancellationError(), staysLive: true))
    }
  }

  struct Session: TrackerSession {
    let connector: ScriptedConnector
    let snapshot: TopicUpdate?
    let updates: [TopicUpdate]
    let error: any Error
    var handshakeError: (any Error)?
    var pullError: (any Error)?
    var refusal: Refusal?
    var staysLive = false

    func established() async throws -> Int64? {
      if let handshakeError { throw handshakeError }
      return connector.handshakeClock
    }

    func cards(in topic: String) async throws -> TopicUpdate {
      connector.pulls.withLock { $0 += 1 }
      if let pullError { throw pullError }
      return snapshot ?? TopicUpdate(topic: topic, epoch: 7, throughOffset: 0)
    }

    /// Streams the updates of `positions`' topics, then fails with `error` (or as `refusal` says).
    func updates(from positions: [TopicPosition]) -> AsyncThrowingStream<TopicUpdate, any Error> {
      connector.requestedPositions.withLock { $0.append(positions) }
      if let refusal { return refusal.updates(from: positions) }
      if staysLive {
        let calls = Mutex(0)
        return AsyncThrowingStream {
          if calls.withLock({ $0 += 1; return $0 }) == 1 { return confirmation(positions[0].topic) }
          await untilCancelled()
          return nil
        }
      }
      let (stream, continuation) = AsyncThrowingStream<TopicUpdate, any Error>.makeStream()
      for update in updates where positions.contains(where: { $0.topic == update.topic }) { continuation.yield(update) }
      continuation.finish(throwing: error)
      return stream
    }
  }

  /// A session's subscriptions when the broker refuses one topic's: see
  /// ``Step/refuseSubscription(to:error:)``.
  struct Refusal: Sendable {
    let topic: String
    let error: any Error
    /// Yields once another subscription has applied its confirmation.
    let answered: AsyncStream<Void>
    let answer: AsyncStream<Void>.Continuation

    init(topic: String, error: any Error) {
      (self.topic, self.error) = (topic, error)
      (answered, answer) = AsyncStream.makeStream()
    }

    func updates(from positions: [TopicPosition]) -> AsyncThrowingStream<TopicUpdate, any Error> {
      let (error, answered, answer) = (error, answered, answer)
      if positions.contains(where: { $0.topic == topic }) {
        return AsyncThrowingStream {
          for await _ in answered { break }
          throw error
        }
      }
      let confirmed = confirmation(positions[0].topic)  // a service subscribes to its topic alone
      let calls = Mutex(0)
      return AsyncThrowingStream {
        if calls.withLock({ $0 += 1; return $0 }) == 1 { return confirmed }
        answer.yield()  // asked for the next update: the confirmation is applied
        throw error
      }
    }
  }
}

/// Returns once the task is cancelled (a stream that never yields ends then).
func untilCancelled() async {
  let (never, continuation) = AsyncStream<Void>.makeStream()
  for await _ in never {}
  continuation.finish()
}

/// An update confirming position 0 of epoch 7, which a pulled empty topic has: the first
/// update a broker sends on a subscription from there.
func confirmation(_ topic: String = "t") -> TopicUpdate { TopicUpdate(topic: topic, epoch: 7, throughOffset: 0) }

@Suite("ConnectionManager: backoff, resume, giving up", .timeLimit(.minutes(1)))
struct ConnectionManagerTests {
  let clock = ManualWallClock()

  /// What a run did.
  struct Run {
    var tracker: TrackerDataManager
    var manager: ConnectionManager
    /// The backoff's delays, in order.
    var sleeps: [Duration]
    /// The phases the manager published, from the start — the last eight, as many as its state
    /// stream keeps.
    var phases: [ConnectionState.Phase]
  }

  /// Runs a manager following `topics` through `connector`'s script, until the script is over,
  /// its cache written to `persistence`; each backoff's sleep moves the clock on. The
  /// write-behind task waits an hour: within a test, only the manager's own flushes write.
  func run(
    _ connector: ScriptedConnector, topics: [String] = ["t"], persistence: (any CachePersistence)? = nil,
    staleAfterOffline: Duration = .seconds(30), backoff: Backoff = Backoff(initial: .milliseconds(250), maximum: .seconds(1))
  ) async throws -> Run {
    let tracker = TrackerDataManager(
      cache: try CardCache(persistence: persistence), topics: topics,
      configuration: .init(staleAfterOffline: staleAfterOffline, flushInterval: .seconds(3600), nowMillis: clock.function))
    let sleeps = Mutex<[Duration]>([])
    let manager = ConnectionManager(
      connector: connector, services: topics.map { ServiceDataManager(name: $0, topic: $0) }, tracker: tracker, backoff: backoff,
      nowMillis: clock.function,
      sleep: { [clock] duration in
        sleeps.withLock { $0.append(duration) }
        clock.advance(by: duration)
        if connector.isOver { throw CancellationError() }
      },
      unitRandom: { 1 })
    let states = manager.stateUpdates()
    await manager.run()
    var phases: [ConnectionState.Phase] = []
    for await state in states { phases.append(state.phase) }
    return Run(tracker: tracker, manager: manager, sleeps: sleeps.withLock { $0 }, phases: phases)
  }

  /// With no services there is nothing to subscribe, so no session could ever go live: the
  /// manager stops at once rather than connecting and backing off for ever.
  @Test func aManagerWithoutServicesStopsWithoutConnecting() async throws {
    let connector = ScriptedConnector([.serve(snapshot: nil, updates: [], then: RPCError(code: .unavailable, message: "gone"))])
    let outcome = try await run(connector, topics: [])
    #expect(outcome.phases.last == .stopped(reason: "no services to keep connected"))
    #expect(outcome.sleeps.isEmpty && !connector.isOver)
  }

  @Test func aSessionWhoseHandshakeIsRefusedIsNeverLiveAndKeepsBackingOff() async throws {
    let refused = RPCError(code: .unavailable, message: "refused")
    let connector = ScriptedConnector([.refuseHandshake(refused), .refuseHandshake(refused), .refuseHandshake(refused)])
    // A session reported live would reset the backoff: 250 ms each time.
    let sleeps = try await run(connector).sleeps
    #expect(Array(sleeps.prefix(3)) == [.milliseconds(250), .milliseconds(500), .seconds(1)])
  }

  /// The handshake's server time corrects the client's clock before any update does: a card
  /// whose `expiresAt` has passed by the broker's clock, 100 s ahead, is not shown, though the
  /// snapshot carries no server time and the client's clock says it has 50 s to go.
  @Test func theHandshakesClockCorrectsExpiry() async throws {
    let drop = RPCError(code: .unavailable, message: "cut")
    var snapshot = update("t", from: 1, [card("a", priority: 1, expiresAt: (clock.now + 50_000) / 1000)], snapshot: true)
    snapshot.serverTimeMillis = nil
    let steps: [ScriptedConnector.Step] = [.serve(snapshot: snapshot, updates: [], then: drop)]
    let corrected = try await run(ScriptedConnector(steps, handshakeClock: clock.now + 100_000)).tracker
    #expect(corrected.modes.browse.isEmpty)
    let uncorrected = try await run(ScriptedConnector(steps)).tracker
    #expect(uncorrected.modes.browse.map(\.cardID) == ["a"])
  }

  @Test func failuresBackOffExponentiallyUpToTheCapAndALiveSessionResetsIt() async throws {
    let drop = RPCError(code: .unavailable, message: "gone")
    let connector = ScriptedConnector([
      .refuse(drop), .refuse(drop), .refuse(drop), .refuse(drop),
      .serve(snapshot: nil, updates: [confirmation()], then: drop), .refuse(drop),
    ])
    let sleeps = try await run(connector).sleeps
    #expect(Array(sleeps.prefix(6)) == [.milliseconds(250), .milliseconds(500), .seconds(1), .seconds(1), .milliseconds(250), .milliseconds(500)])
  }

  /// A broker that completes the handshake but refuses every call (here: a storage outage,
  /// no hint) is no live session for the backoff: its delays keep growing.
  @Test func sessionsWhoseCallsAreAllRefusedKeepBackingOff() async throws {
    let refused = RPCError(code: .unavailable, message: "storage failed")
    let connector = ScriptedConnector(Array(repeating: .refusePull(refused, updates: [], then: refused), count: 4))
    let sleeps = try await run(connector).sleeps
    #expect(Array(sleeps.prefix(4)) == [.milliseconds(250), .milliseconds(500), .seconds(1), .seconds(1)])
  }

  /// A broker that completes the handshake and answers the pull but refuses the subscription
  /// (the subject at its subscription limit) never makes the connection live: the card goes
  /// stale counting from the first attempt, not from each handshake.
  @Test func sessionsWhoseSubscriptionIsRefusedAreNeverLive() async throws {
    let full = RPCError(code: .resourceExhausted, message: "the subject holds 100 subscriptions")
    let snapshot = update("t", from: 1, [card("a", priority: 1)], snapshot: true)
    let start = clock.now
    let outcome = try await run(
      ScriptedConnector(Array(repeating: .serve(snapshot: snapshot, updates: [], then: full), count: 3)), staleAfterOffline: .seconds(1),
      backoff: Backoff(initial: .seconds(5), maximum: .seconds(5)))
    #expect(clock.now - start == 15_000)
    #expect(!outcome.phases.contains(.live), "\(outcome.phases)")
    #expect(outcome.tracker.modes.browse.map(\.staleness) == [.offline(sinceMillis: start)])
  }

  /// One topic answered and the other's subscription refused, session after session: the
  /// delays keep growing. A session whose every subscription is answered, then lost, starts
  /// them over.
  @Test func aRefusedSubscriptionAmongAnsweredOnesKeepsBackingOff() async throws {
    let full = RPCError(code: .resourceExhausted, message: "the subject holds 100 subscriptions")
    let drop = RPCError(code: .unavailable, message: "cut")
    let connector = ScriptedConnector(
      Array(repeating: .refuseSubscription(to: "b", error: full), count: 3) + [
        .serve(snapshot: nil, updates: [confirmation("a"), confirmation("b")], then: drop), .refuse(drop),
      ])
    let sleeps = try await run(connector, topics: ["a", "b"]).sleeps
    #expect(sleeps == [.milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(250), .milliseconds(500)])
  }

  /// A session whose every subscription is answered, then refused by the broker (a card larger
  /// than the client's message limit ends its stream with RESOURCE_EXHAUSTED), was live but
  /// does not start the backoff over: reconnecting at once would refuse it again at once.
  @Test func aSessionRefusedAfterItWentLiveKeepsBackingOff() async throws {
    let tooLarge = RPCError(code: .resourceExhausted, message: "an update over this connection's message limit")
    let connector = ScriptedConnector(Array(repeating: .serve(snapshot: nil, updates: [confirmation()], then: tooLarge), count: 3))
    let outcome = try await run(connector)
    #expect(outcome.phases.contains(.live))
    #expect(outcome.sleeps == [.milliseconds(250), .milliseconds(500), .seconds(1)])
  }

  /// A client restarted during an outage has been offline since its cache last heard from the
  /// broker — here the topic's "verified at", 5 s after its card arrived, by the broker's clock
  /// 2 s ahead — so its card, ten minutes old, is stale from the first attempt on.
  @Test func aClientRestartedDuringAnOutageIsOfflineSinceItsCacheLastHeardFromTheBroker() async throws {
    let persistence = RecordingPersistence()
    let heard = clock.now
    let cached = CachedCard(topic: "t", card: card("a", priority: 1), offset: 1, receivedAtMillis: heard - 5000)
    try persistence.save(
      [TopicCache(topic: "t", epoch: 7, position: 1, verifiedAtMillis: heard + 2000, cards: ["a": cached])], clockSkewMillis: 2000)
    clock.advance(by: .seconds(600))
    let outcome = try await run(ScriptedConnector([.refuse(RPCError(code: .unavailable, message: "down"))]), persistence: persistence)
    #expect(outcome.tracker.modes.browse.map(\.staleness) == [.offline(sinceMillis: heard)])
  }

  @Test func aRetryAfterHintIsHonoured() async throws {
    let connector = ScriptedConnector([.refuse(RPCError(code: .unavailable, message: "busy", retryAfterMillis: 5000))])
    let sleeps = try await run(connector).sleeps
    #expect(sleeps.first == .seconds(5))
  }

  /// A misconfigured broker's hint of ten hours keeps the client away five minutes at most.
  @Test func aRetryAfterHintIsHonouredUpToTheMaximum() async throws {
    let connector = ScriptedConnector([.refuse(RPCError(code: .unavailable, message: "busy", retryAfterMillis: 36_000_000))])
    let sleeps = try await run(connector).sleeps
    #expect(sleeps.first == .seconds(300))
  }

  @Test(arguments: [StatusCode.unauthenticated, .failedPrecondition])
  func aRefusalNoRetryCanFixStopsForGood(code: StatusCode) async throws {
    let connector = ScriptedConnector([.refuse(RPCError(code: code, message: "refused")), .refuse(CancellationError())])
    let outcome = try await run(connector)
    let (manager, sleeps) = (outcome.manager, outcome.sleeps)
    #expect(sleeps.isEmpty)
    guard case .stopped = manager.connectionState.phase else {
      Issue.record("expected stopped, got \(manager.connectionState)")
      return
    }
  }

  /// A client the broker refuses for good has written its latest updates when it stops, not
  /// only those of its last write-behind.
  @Test func aClientThatStopsForGoodHasWrittenItsLatestUpdates() async throws {
    let persistence = RecordingPersistence()
    let refused = RPCError(code: .unauthenticated, message: "the token expired")
    let connector = ScriptedConnector([
      .serve(
        snapshot: update("t", from: 1, [card("a", priority: 1)], snapshot: true), updates: [update("t", from: 2, [card("b", priority: 1)])],
        then: refused)
    ])
    let manager = try await run(connector, persistence: persistence).manager
    #expect(manager.connectionState.phase == .stopped(reason: "\(refused)"))
    let stored = try #require(persistence.topic("t"))
    #expect(stored.position == 2 && Set(stored.cards.keys) == ["a", "b"])
  }

  /// A topic whose snapshot does not fit one message cannot be pulled (RESOURCE_EXHAUSTED):
  /// the service subscribes from no position instead, and the stream's snapshot fills it.
  @Test func aSnapshotTooLargeToPullComesByTheStream() async throws {
    let tooLarge = RPCError(code: .resourceExhausted, message: "the snapshot does not fit a message")
    let drop = RPCError(code: .unavailable, message: "cut")
    let snapshot = update("t", from: 1, [card("a", priority: 1)], snapshot: true)
    let connector = ScriptedConnector([.refusePull(tooLarge, updates: [snapshot], then: drop)])
    let tracker = try await run(connector).tracker
    #expect(connector.requestedPositions.withLock { $0 }.first == [TopicPosition(topic: "t")])
    #expect(tracker.modes.browse.map(\.cardID) == ["a"])
  }

  @Test func reconnectsResumeFromTheAppliedPositionWithoutPullingAgain() async throws {
    let drop = RPCError(code: .unavailable, message: "cut")
    let connector = ScriptedConnector([
      .serve(snapshot: update("t", from: 1, [card("a", priority: 1)], snapshot: true), updates: [update("t", from: 2, [card("b", priority: 1)])], then: drop),
      .serve(snapshot: nil, updates: [update("t", from: 3, [card("a", priority: 2)])], then: drop),
    ])
    let tracker = try await run(connector).tracker
    #expect(connector.pulls.withLock { $0 } == 1)
    #expect(connector.requestedPositions.withLock { $0 } == [
      [TopicPosition(topic: "t", epoch: 7, offset: 1)], [TopicPosition(topic: "t", epoch: 7, offset: 2)],
    ])
    #expect(tracker.modes.browse.map(\.cardID) == ["a", "b"])
    #expect(tracker.modes.browse.first?.card.priority == 2)
  }

  @Test func theStateStreamTellsConnectingLiveAndBackingOff() async throws {
    let drop = RPCError(code: .unavailable, message: "cut")
    let connector = ScriptedConnector([.refuse(drop), .serve(snapshot: nil, updates: [confirmation()], then: drop)])
    let tracker = TrackerDataManager(cache: try CardCache(persistence: nil), topics: ["t"], configuration: .init(nowMillis: clock.function))
    let sleeps = Mutex(0)
    let manager = ConnectionManager(
      connector: connector, services: [ServiceDataManager(name: "svc", topic: "t")], tracker: tracker, nowMillis: clock.function,
      sleep: { _ in
        // The third backoff ends the run.
        if sleeps.withLock({ $0 += 1; return $0 }) == 3 { throw CancellationError() }
      }, unitRandom: { 0 })
    let states = manager.stateUpdates()
    await manager.run()
    var phases: [String] = []
    for await state in states {
      switch state.phase {
      case .idle: phases.append("idle")
      case .connecting(let attempt): phases.append("connecting \(attempt)")
      case .live: phases.append("live")
      case .backingOff: phases.append("backing off")
      case .stopped(let reason): phases.append("stopped: \(reason)")
      }
    }
    // The last eight, as many as the stream keeps: the first, idle, is gone.
    #expect(phases == ["connecting 1", "backing off", "connecting 2", "live", "backing off", "connecting 1", "backing off", "stopped: cancelled"])
  }

  /// A run that ends — here its task cancelled while live — leaves the state stopped and
  /// ends every state stream, and one asked for afterwards holds that state alone. (They had
  /// stayed open for ever, the state "backing off".)
  @Test func aRunThatEndsStopsAndEndsItsStateStreams() async throws {
    let tracker = TrackerDataManager(cache: try CardCache(persistence: nil), topics: ["t"], configuration: .init(nowMillis: clock.function))
    let manager = ConnectionManager(
      connector: ScriptedConnector([.stayLive]), services: [ServiceDataManager(name: "svc", topic: "t")], tracker: tracker,
      nowMillis: clock.function, sleep: { _ in try Task.checkCancellation() })
    var states = manager.stateUpdates().makeAsyncIterator()
    let run = Task { await manager.run() }
    while let state = await states.next(), state.phase != .live {}
    run.cancel()
    await run.value
    var last: ConnectionState?
    while let state = await states.next() { last = state }  // ends, or the time limit fails the test
    #expect(last?.phase == .stopped(reason: "cancelled"))
    #expect(tracker.modes.connection.phase == .stopped(reason: "cancelled"))
    var later: [ConnectionState.Phase] = []
    for await state in manager.stateUpdates() { later.append(state.phase) }
    #expect(later == [.stopped(reason: "cancelled")])
  }
}
