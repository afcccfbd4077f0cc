import CoreMetrics
import Logging
public import PushlineRPC
public import PushlineSchema
import Synchronization

/// The push pipeline without a transport: topics and their card tables, publishes made
/// durable with group commit, and subscriptions fed in offset order with coalescing.
///
/// Two locks, each held briefly and never across an `await`. The intake's: publishes assign
/// offsets and queue for the next commit under it, and the committer takes them from it — so a
/// publish never waits for a fan-out. The topics' lock: the committer applies committed
/// changes under it and collects each topic's subscribers, and subscribers attach under it —
/// so each subscription sees a topic's changes exactly once, in offset order, after its
/// catch-up or snapshot. When both are needed, the intake's is taken first.
public final class Broker: Sendable {
  /// The longest `cardID` or `idempotencyKey` a publish may carry, in bytes: each is kept as a
  /// key (in storage, in every queue), so a few hundred bytes at most.
  public static let maxKeySize = 256
  /// The largest card a publish may carry, encoded, in bytes: tracker cards are a few hundred,
  /// and a card is kept, and sent to each subscriber, whole.
  public static let maxCardSize = 64 << 10

  /// The topics, their subscribers and the subscriptions.
  struct State {
    var topics: [String: TopicState] = [:]
    var subscribers: [String: [ObjectIdentifier: Subscription]] = [:]
    var subscriptions: [ObjectIdentifier: Subscription] = [:]
    /// How many subscriptions each token subject holds.
    var subscriptionsPerSubject: [String: Int] = [:]
    var isShutDown = false
    /// Drawn once per broker: the epoch of a topic no one has published to is derived from it
    /// and the topic's name (see ``Broker/newTopic(_:in:)``).
    let epochSeed = UInt64.random(in: .min ... .max)
  }

  /// The publishes on their way to storage, and what they need to be assigned offsets and
  /// deduplicated.
  struct Intake {
    /// Per topic published to: its epoch and the last offset handed out (committed or not);
    /// no offset is given twice while the broker runs, even after a failed commit. (Not stored:
    /// a restart goes on from the last offset committed, PROTOCOL.md 3.1.)
    var heads: [String: (epoch: Int64, lastAssigned: Int64)] = [:]
    /// The publishes waiting for a commit or being committed: a retry of one joins it there, as
    /// one of its retries.
    var publishes = InFlightPublishes()
    var pendingPrunes: [TombstonePrune] = []
    /// The prunes of commits that failed, merged per topic (the age prune retried every minute
    /// of an outage adds to its topic's, not a copy): they go with the next commit that carries
    /// a publish (alone, they would be retried in a loop for as long as storage fails).
    var failedPrunes: [String: TombstonePrune] = [:]
    var isCommitting = false
    var publishRecords = PublishRecords()
    /// The topics given a new epoch in this run because a client showed their history lost
    /// (``Broker/startNewEpoch(of:)``): one each at most.
    var newEpochRequested: Set<String> = []
    /// Those new epochs that are stored, in which the topic's idempotency records are answered.
    var storedNewEpochs: [String: Int64] = [:]
    /// The new epochs waiting for the next commit.
    var pendingNewEpochs: [String: Int64] = [:]
    /// The new epochs of commits that failed: they go with the next commit that carries a
    /// publish, as failed prunes do.
    var failedNewEpochs: [String: Int64] = [:]
    /// When every topic was last looked at for tombstones past the maximum age.
    var lastAgePruneMillis: Int64?

    /// Whether the caller starts the committing (none runs yet): it then commits what is
    /// pending, batch after batch, until nothing is left.
    mutating func startsCommitting() -> Bool {
      guard !isCommitting else { return false }
      isCommitting = true
      return true
    }
  }

  struct PublishRecordKey: Hashable {
    var topic: String
    var key: String
  }

  let storage: any BrokerStorage
  /// The broker's settings.
  public let configuration: BrokerConfiguration
  let state: Mutex<State>
  let intake: Mutex<Intake>
  /// The subscriptions whose overflowed topics are being resynchronized in a task.
  private let resynchronizing = Mutex(Set<ObjectIdentifier>())
  let admission: AdmissionLimiter
  /// Positions ahead of their topic: history storage lost.
  private let historyLoss: HistoryLossReport

  /// A broker over `storage`, loaded with what it holds: topics keep their epochs and
  /// offsets across restarts, and idempotency keys their window.
  ///
  /// - Throws: whatever `storage` throws while loading.
  public init(storage: any BrokerStorage, configuration: BrokerConfiguration = BrokerConfiguration()) async throws {
    self.storage = storage
    self.configuration = configuration
    var state = State()
    for topic in try await storage.loadTopics() { state.topics[topic.name] = topic }
    let now = configuration.nowMillis()
    var intake = Intake()
    intake.publishRecords = PublishRecords(try await storage.loadPublishRecords(sinceMillis: now - configuration.idempotencyWindowMillis))
    self.state = Mutex(state)
    self.intake = Mutex(intake)
    admission = AdmissionLimiter(
      ratePerSecond: Double(configuration.maxSubscribesPerSecond), burst: configuration.maxSubscribesPerSecond,
      refusal: "too many clients are subscribing; retry later", nowMillis: now)
    historyLoss = HistoryLossReport(counter: configuration.metrics.positionsAhead, logger: configuration.logger)
  }

  /// A topic's snapshot: its live, unexpired cards positioned at the top offset. (A topic no
  /// one has published to is not kept for it: reads must not grow the broker.)
  ///
  /// - Parameter maxMessageSize: the largest message the reader's connection takes (the
  ///   limit its handshake agreed).
  /// - Throws: INVALID_ARGUMENT for a bad topic name, PERMISSION_DENIED when `principal`
  ///   may not read it, RESOURCE_EXHAUSTED when the snapshot would not fit a message (a
  ///   subscription sends such a topic in parts).
  public func cards(
    in topic: String, for principal: Principal, maxMessageSize: Int = ConnectionLimits.defaults.maxMessageSize
  ) throws(RPCError) -> EncodedTopicUpdate {
    try Self.authorizeRead(topic, principal)
    let now = configuration.nowMillis()
    // Copied under the lock (the card table is shared, not copied), built outside it: a
    // topic of 100,000 cards takes a while to sort, and commits and subscribes wait for the lock.
    let copy = state.withLock { state in state.topics[topic] ?? Self.newTopic(topic, in: state) }
    let snapshot = copy.snapshot(nowMillis: now)
    let size = snapshot.encodedSize()
    guard size <= maxMessageSize else {
      throw RPCError(
        code: .resourceExhausted,
        message: "the snapshot of topic \"\(topic)\" is \(size) bytes, over this connection's \(maxMessageSize)-byte message limit: subscribe to it, which sends it in parts")
    }
    return snapshot
  }

  /// Reads of topics with more cards than this together have their snapshots and catch-ups
  /// built off the caller's executor (``buildingStarts(of:_:)``).
  static let largeTopicCards = 4096

  /// Runs `body` — a read that builds the snapshots or catch-ups of `topics` (``cards(in:for:maxMessageSize:)``,
  /// ``subscribe(_:for:maxMessageSize:)``) — on the global executor when they have many cards
  /// together, not on the caller's: a transport's is its connection's event loop, which other
  /// connections share, and sorting 100,000 cards takes tens of milliseconds (fifty such reads
  /// held a loop, and its connections' publishes and deliveries, for 1.5 s).
  public func buildingStarts<T: Sendable>(
    of topics: [String], _ body: @Sendable () throws(RPCError) -> T
  ) async throws(RPCError) -> T {
    // No more topics than a subscription may name are counted: `body` refuses more.
    guard cardCount(of: topics.prefix(configuration.maxTopicsPerSubscription)) > Self.largeTopicCards else { return try body() }
    return try await withTaskExecutorPreference(globalConcurrentExecutor) { () async throws(RPCError) -> T in try body() }
  }

  /// How many cards and tombstones `topics` hold together.
  private func cardCount(of topics: some Sequence<String>) -> Int {
    state.withLock { state in topics.reduce(0) { $0 + (state.topics[$1]?.records.count ?? 0) } }
  }

  /// Opens a subscription: per topic, the changes since the client's position when it can
  /// resume, otherwise a snapshot; then live changes. Call ``nextUpdates(for:)`` to drain it
  /// and ``unsubscribe(_:)`` when the stream ends.
  ///
  /// - Parameter maxMessageSize: the largest message the subscriber's connection takes (the
  ///   limit its handshake agreed): snapshots go in parts that fit it, and a card that cannot
  ///   ends the stream with RESOURCE_EXHAUSTED.
  /// - Throws: INVALID_ARGUMENT for no, too many, repeated or badly named topics;
  ///   PERMISSION_DENIED when `principal` may not read one of them; RESOURCE_EXHAUSTED when
  ///   its subject holds ``BrokerConfiguration/maxSubscriptionsPerSubject`` already; UNAVAILABLE with a
  ///   retry-after hint past the admission rate or after ``shutDown()``.
  public func subscribe(
    _ request: SubscribeRequest, for principal: Principal, maxMessageSize: Int = ConnectionLimits.defaults.maxMessageSize
  ) throws(RPCError) -> Subscription {
    try open(try prepareSubscription(request, for: principal), maxMessageSize: maxMessageSize)
  }

  /// ``subscribe(_:for:maxMessageSize:)``'s first step: the request checked and admitted — its
  /// place under the subject's limit kept from then on — and each topic's catch-up or snapshot
  /// built outside the lock, from a copy (a refused subscribe costs no build).
  func prepareSubscription(_ request: SubscribeRequest, for principal: Principal) throws(RPCError) -> PreparedSubscription {
    guard (1...configuration.maxTopicsPerSubscription).contains(request.topics.count) else {
      throw RPCError(
        code: .invalidArgument,
        message: "a subscription needs 1 to \(configuration.maxTopicsPerSubscription) topics, got \(request.topics.count)")
    }
    guard Set(request.topics.map(\.topic)).count == request.topics.count else {
      throw RPCError(code: .invalidArgument, message: "a subscription names each topic once")
    }
    for position in request.topics { try Self.authorizeRead(position.topic, principal) }
    let now = configuration.nowMillis()
    let copies = try state.withLock { state throws(RPCError) in
      let held = try admissible(principal, in: state)
      // Last: a token is spent only on a subscribe that is otherwise admitted. (The limiter's
      // lock is taken under this one, and takes no other.)
      try admission.admit(nowMillis: now)
      state.subscriptionsPerSubject[principal.subject] = held + 1
      return request.topics.map { state.topics[$0.topic] }
    }
    // Each catch-up within half the room the earlier topics' catch-ups leave in the queue,
    // else a snapshot: a catch-up's cards changed meanwhile queue behind it, and need the rest.
    for (position, copy) in zip(request.topics, copies) {
      guard let copy, position.epoch == copy.epoch, let offset = position.offset, offset > copy.topOffset else { continue }
      historyLoss.note(topic: copy.name, epoch: copy.epoch, offset: offset, topOffset: copy.topOffset, nowMillis: now)
      startNewEpoch(of: copy.name)
    }
    var room = configuration.maxQueuedChangesPerSubscription
    let starts = zip(request.topics, copies).map { position, copy in
      copy.map { copy in
        let start = PreparedStart(copy, from: position, catchUpsUpTo: room / 2, nowMillis: now)
        room -= start.catchUp?.count ?? 0
        return start
      }
    }
    return PreparedSubscription(request: request, principal: principal, nowMillis: now, starts: starts)
  }

  /// ``subscribe(_:for:maxMessageSize:)``'s second step: the subscription attached to its
  /// topics, each with its prepared start and the changes made since — or, for a start gone
  /// stale (removals pruned meanwhile) or a catch-up that no longer fits behind the changes
  /// made meanwhile, with a snapshot built anew outside the lock, as an overflowed queue's is.
  func open(_ prepared: PreparedSubscription, maxMessageSize: Int) throws(RPCError) -> Subscription {
    let (principal, now) = (prepared.principal, prepared.nowMillis)
    let (subscription, deferred) = try state.withLock { state throws(RPCError) in
      // A shutdown may have begun meanwhile: the place kept goes back.
      guard !state.isShutDown else {
        Self.release(placeOf: principal.subject, in: &state)
        throw RPCError(code: .unavailable, message: "the broker is shutting down", retryAfterMillis: 1000)
      }
      let subscription = Subscription(
        principal: principal, maxQueuedChanges: configuration.maxQueuedChangesPerSubscription, maxMessageSize: maxMessageSize,
        nowMillis: now, overflows: configuration.metrics.queueOverflows)
      let id = ObjectIdentifier(subscription)
      var deferred: [String] = []
      for (position, prepared) in zip(prepared.request.topics, prepared.starts) {
        // A topic no one has published to is not kept for its readers (reads must not grow
        // the broker): a publish makes it anew, in the same epoch.
        let topic = state.topics[position.topic] ?? Self.newTopic(position.topic, in: state)
        let room = configuration.maxQueuedChangesPerSubscription - subscription.queuedChanges
        // A topic that did not exist at the first step was empty then, in the epoch it has
        // now: its first publishes since are the changes that follow its start.
        let start = prepared ?? PreparedStart(Self.newTopic(position.topic, in: state), from: position, nowMillis: now)
        if let delta = start.delta(in: topic), (start.catchUp?.count ?? 0) <= room / 2 {
          subscription.attach(topic, through: start.topOffset, catchUp: start.catchUp, snapshot: start.snapshot, then: delta)
        } else {
          subscription.attachAwaitingSnapshot(topic)
          deferred.append(topic.name)
        }
        state.subscribers[topic.name, default: [:]][id] = subscription
      }
      state.subscriptions[id] = subscription
      configuration.metrics.subscriptions.record(state.subscriptions.count)
      return (subscription, deferred)
    }
    if !deferred.isEmpty { queueSnapshots(of: deferred, for: subscription, nowMillis: now) }
    return subscription
  }

  /// How many subscriptions `principal`'s subject holds, if it may open another: the broker
  /// is not shutting down, and the subject holds fewer than its limit.
  private func admissible(_ principal: Principal, in state: State) throws(RPCError) -> Int {
    guard !state.isShutDown else {
      throw RPCError(code: .unavailable, message: "the broker is shutting down", retryAfterMillis: 1000)
    }
    let held = state.subscriptionsPerSubject[principal.subject, default: 0]
    let limit = configuration.maxSubscriptionsPerSubject
    guard limit == 0 || held < limit else {
      throw RPCError(code: .resourceExhausted, message: "subject \"\(principal.subject)\" already holds \(limit) subscriptions")
    }
    return held
  }

  /// Gives back a subscription's place under `subject`'s limit.
  private static func release(placeOf subject: String, in state: inout State) {
    let held = state.subscriptionsPerSubject[subject, default: 1] - 1
    state.subscriptionsPerSubject[subject] = held > 0 ? held : nil
  }

  /// The next updates `subscription` should send, waiting until there are some.
  ///
  /// - Throws: the ``RPCError`` that ended the subscription (an expired token, a shutdown),
  ///   or `CancellationError`.
  public func nextUpdates(for subscription: Subscription) async throws -> [EncodedTopicUpdate] {
    while true {
      let updates = try readyUpdates(for: subscription)
      if !updates.isEmpty { return updates.map(\.topicUpdate) }
      try await subscription.waitUntilReady()
    }
  }

  /// The updates `subscription` can send now, possibly none; a topic whose queue overflowed
  /// gets its fresh snapshot here — or, with `buildingOffTheCaller` (a transport pulling on
  /// its event loop), from a task on the global executor when its topics hold many cards, the
  /// subscription's drain woken once it is queued (``buildingStarts(of:_:)`` says why).
  ///
  /// - Throws: the ``RPCError`` that ended the subscription.
  func readyUpdates(for subscription: Subscription, buildingOffTheCaller: Bool = false) throws(RPCError) -> [AssembledTopicUpdate] {
    let now = configuration.nowMillis()
    // Between two ticks, the take finds the expiry first: ended here, so that it is logged.
    if subscription.principal.expiresAtMillis <= now { endExpired(subscription) }
    let overflowed = subscription.topicsNeedingSnapshot
    // Not for a stream that has ended (a shutdown's GOAWAY, an expiry): the take throws its end.
    if !overflowed.isEmpty, !subscription.hasEnded {
      if buildingOffTheCaller, cardCount(of: overflowed) > Self.largeTopicCards {
        resynchronizeLater(subscription, overflowed)
      } else {
        queueSnapshots(of: overflowed, for: subscription, nowMillis: now)
      }
    }
    let updates = try subscription.takeReady(maxChanges: configuration.maxChangesPerUpdate, nowMillis: now) ?? []
    if !updates.isEmpty {
      configuration.metrics.deliveredChanges.increment(by: updates.reduce(0) { $0 + $1.changeCount })
    }
    return updates
  }

  /// Queues a fresh snapshot of each of `topics`, which await one for `subscription` (an
  /// overflow, a start gone stale): built outside the lock from copies, as a subscription's
  /// starts are.
  private func queueSnapshots(of topics: [String], for subscription: Subscription, nowMillis now: Int64) {
    let copies = state.withLock { state in topics.map { state.topics[$0] } }
    let prepared = copies.map { $0.map { PreparedStart($0, from: nil, nowMillis: now) } }
    state.withLock { state in
      for (name, prepared) in zip(topics, prepared) {
        let topic = state.topics[name] ?? Self.newTopic(name, in: state)
        // The changes made meanwhile must fit the queue's room: overflowing again, they would
        // drop the snapshot just queued, and leave the take nothing to send and no one to
        // wake the stream (a snapshot is built from the topic as it is now instead).
        let room = configuration.maxQueuedChangesPerSubscription - subscription.queuedChanges
        if let prepared, let snapshot = prepared.snapshot, let delta = prepared.delta(in: topic), delta.count <= room {
          subscription.resynchronize(topic, snapshot: snapshot, through: prepared.topOffset, then: delta)
        } else {
          subscription.resynchronize(topic, snapshot: topic.snapshot(nowMillis: now), through: topic.topOffset, then: [])
        }
      }
    }
  }

  /// ``queueSnapshots(of:for:nowMillis:)`` in a task on the global executor — one per
  /// subscription at a time — then wakes the subscription's drain.
  private func resynchronizeLater(_ subscription: Subscription, _ overflowed: [String]) {
    let id = ObjectIdentifier(subscription)
    guard resynchronizing.withLock({ $0.insert(id).inserted }) else { return }
    Task(executorPreference: globalConcurrentExecutor) {
      self.queueSnapshots(of: overflowed, for: subscription, nowMillis: self.configuration.nowMillis())
      self.resynchronizing.withLock { _ = $0.remove(id) }
      subscription.wakeDrain()
    }
  }

  /// Stops feeding `subscription`, and lets go of its pump (which holds the subscription).
  public func unsubscribe(_ subscription: Subscription) {
    subscription.detach()
    let id = ObjectIdentifier(subscription)
    state.withLock { state in
      guard state.subscriptions.removeValue(forKey: id) != nil else { return }
      Self.release(placeOf: subscription.principal.subject, in: &state)
      for topic in subscription.state.withLock({ Array($0.topics.keys) }) {
        state.subscribers[topic]?[id] = nil
        if state.subscribers[topic]?.isEmpty == true { state.subscribers[topic] = nil }
      }
      configuration.metrics.subscriptions.record(state.subscriptions.count)
    }
  }

  /// The periodic duties, to be called every second or so (``run()`` does): a watermark for
  /// each subscribed topic idle for the watermark interval, once a minute the prune of
  /// tombstones past the maximum age in every topic, the end, with UNAUTHENTICATED, of
  /// each subscription whose token has expired, and the queue-depth gauge.
  public func tick() {
    let now = configuration.nowMillis()
    let interval = configuration.watermarkInterval.milliseconds
    var (queued, longest) = (0, 0)
    for subscription in state.withLock({ Array($0.subscriptions.values) }) {
      let depth = subscription.queuedChanges
      queued += depth
      longest = max(longest, depth)
      if subscription.principal.expiresAtMillis <= now {
        endExpired(subscription)
      } else {
        subscription.markWatermarksDueIfIdle(nowMillis: now, intervalMillis: interval)
      }
    }
    configuration.metrics.queuedChanges.record(queued)
    configuration.metrics.longestQueue.record(longest)
    pruneAgedTombstones(nowMillis: now)
  }

  /// Ends `subscription`, whose token has expired, with UNAUTHENTICATED, and logs it — once:
  /// a subscription whose connection takes no bytes keeps its end until it closes, and both
  /// the tick and a take may find it expired.
  private func endExpired(_ subscription: Subscription) {
    if subscription.end(with: Subscription.tokenExpired) {
      configuration.logger.info("a subscription's token expired", metadata: ["subject": "\(subscription.principal.subject)"])
    }
  }

  /// Calls ``tick()`` every `interval` until the task is cancelled.
  public func run(tickEvery interval: Duration = .seconds(1)) async {
    while !Task.isCancelled {
      do { try await Task.sleep(for: interval) } catch { return }
      tick()
    }
  }

  /// Starts the shutdown of a broker served some other way than by `RPCServer` (which ends
  /// each stream at its connection's GOAWAY, spread over its lame-duck period): refuses new
  /// subscriptions and ends every open one with UNAVAILABLE and a retry-after hint drawn at
  /// random from the reconnect spread, so that a restart does not bring every client back at
  /// the same instant.
  public func shutDown() {
    let subscriptions = state.withLock { state in
      state.isShutDown = true
      return Array(state.subscriptions.values)
    }
    for subscription in subscriptions { goAway(subscription) }
  }

  /// Ends `subscription` with UNAVAILABLE and a retry-after hint drawn at random from the
  /// reconnect spread: its connection is going away (the server shuts down).
  func goAway(_ subscription: Subscription) {
    let retryAfter = configuration.reconnectSpread.randomRetryAfterMillis()
    subscription.end(with: RPCError(code: .unavailable, message: "the broker is shutting down", retryAfterMillis: retryAfter))
  }

  /// How many subscriptions are open.
  public var subscriptionCount: Int { state.withLock { $0.subscriptions.count } }

  /// The topic named `name`, created (with a fresh epoch, not yet stored) when unknown.
  static func topic(_ name: String, in state: inout State) -> TopicState {
    if let topic = state.topics[name] { return topic }
    let topic = newTopic(name, in: state)
    state.topics[name] = topic
    return topic
  }

  /// A topic with no changes yet, in an epoch new to this broker and the same each time the
  /// topic is made anew: a topic only read is not kept (reads must not grow the broker), and a
  /// client that read it resumes from its position without a snapshot when it comes back.
  private static func newTopic(_ name: String, in state: State) -> TopicState {
    var hasher = Hasher()  // seeded per process: a restarted broker derives other epochs
    hasher.combine(state.epochSeed)
    hasher.combine(name)
    return TopicState(name: name, epoch: Int64(UInt(bitPattern: hasher.finalize()) % (1 << 53)) + 1)
  }

  private static func authorizeRead(_ topic: String, _ principal: Principal) throws(RPCError) {
    try TopicName.validate(topic)
    guard principal.mayRead else {
      throw RPCError(code: .permissionDenied, message: "role \(principal.role.rawValue) may not read topics")
    }
    guard principal.covers(topic) else {
      throw RPCError(code: .permissionDenied, message: "the token does not cover topic \"\(topic)\"")
    }
  }
}
