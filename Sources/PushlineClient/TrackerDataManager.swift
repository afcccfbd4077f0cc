public import PushlineRPC
public import PushlineSchema
import Synchronization

/// The tracker's core, as in the earnings-tracker design: it takes the cards of several
/// upstream services, validates and ranks them, and publishes the three modes — the status
/// mode's selected item, the browse mode's sorted valid cards, and bulletins as events — as
/// immutable values, flowing one way to their consumers.
///
/// Validation: a card is shown when the service marked it valid, it has not expired by the
/// client's clock corrected for the broker's, and its payload is handled by an enabled
/// plugin. The correction is the broker's clock minus the client's, read from the handshake's
/// and the updates' server times (a time that may be old, a snapshot's or a complete update's
/// with changes, only ever raises it: see ``correct(_:by:)``), held within ±24 h
/// (``maximumSkewMillis``): a broker further off is a broken clock, and a time it sends should
/// not make every card expire, or none. A server time so far from the client's clock that the
/// difference does not fit in `Int64` is ignored, and the previous correction kept. Ranking:
/// priority, highest first (a NaN lowest), then cardID, then topic — deterministic.
/// Status: the last card that arrived asking to force the switch, while it stays, still asks, and is valid;
/// otherwise the highest `statusModePriority` (then priority, then the ranking). A tracker
/// started from a cache takes its cards as arriving then: the last of them to arrive that asks
/// forces (see ``lastToForce(in:topics:)``).
public final class TrackerDataManager: Sendable {
  /// How the tracker behaves.
  public struct Configuration: Sendable {
    /// The plugins, one per payload kind.
    public var plugins: [any CardPlugin]
    /// Payload kinds switched off: their cards are not shown, the others are unaffected.
    public var disabledKinds: Set<PayloadKind>
    /// Offline this long, a card is marked stale: counted from when the connection went
    /// offline, or from the card's arrival or its topic's verification if later (a reconnect
    /// whose other services' subscriptions are still unanswered brings fresh cards of the
    /// answered ones). A duration beyond `Int64` milliseconds (some 292 million years) counts
    /// as forever.
    public var staleAfterOffline: Duration
    /// The mode stream carries at most one value per interval while updates pour in (a
    /// screen shows 60 frames a second; recomputing the modes for every update would cap the
    /// rate the client can absorb). `modes` is always current.
    public var minimumPublishInterval: Duration
    /// The cache is written behind about this long after an update, at most once per
    /// interval: a client killed during a long connection restarts with cards about this old,
    /// not with those of before the connection.
    public var flushInterval: Duration
    /// The client's wall clock, Unix milliseconds. Tests inject their own.
    public var nowMillis: @Sendable () -> Int64

    /// The built-in plugins, all enabled; cards stale after 30 s offline.
    public init(
      plugins: [any CardPlugin] = BuiltInPlugins.all, disabledKinds: Set<PayloadKind> = [],
      staleAfterOffline: Duration = .seconds(30), minimumPublishInterval: Duration = .milliseconds(16),
      flushInterval: Duration = .seconds(1), nowMillis: @escaping @Sendable () -> Int64 = WallClock.systemMillis
    ) {
      self.plugins = plugins
      self.disabledKinds = disabledKinds
      self.staleAfterOffline = staleAfterOffline
      self.minimumPublishInterval = minimumPublishInterval
      self.flushInterval = flushInterval
      self.nowMillis = nowMillis
    }
  }

  private struct Forced: Hashable {
    var topic: String
    var cardID: String
    var offset: Int64
  }

  /// A card's version across the broker's epochs: a broker that lost its history starts a
  /// new epoch, whose offsets may repeat the old one's for other changes.
  private struct Version: Hashable {
    var epoch: Int64
    var offset: Int64
  }

  private struct State {
    var forced: Forced?
    /// The version of each bulletin last announced, by ``TrackerDataManager/key(_:_:)``; at
    /// start, those of the cached bulletins (``TrackerDataManager/cachedBulletins(in:topics:)``).
    var announced: [String: Version] = [:]
    var privacy = false
    var connection = ConnectionState()
    /// Broker clock minus client clock, from the handshake's and updates' server times (see
    /// ``TrackerDataManager/correct(_:by:)``); within ±``TrackerDataManager/maximumSkewMillis``.
    var skewMillis: Int64 = 0
    /// Whether `skewMillis` was measured, by this run or (stored) an earlier one, rather than
    /// assumed: an early server time may raise a measured correction only, but is better than none.
    var isSkewMeasured = false
    var modes = TrackerModes.empty
    /// Counts applies; `modes` reflects the cache as of `publishedGeneration`.
    var generation = 0
    var publishedGeneration = 0
    /// A task will publish the modes soon: applies in between only update the cache.
    var isPublishScheduled = false
    var lastPublished = ContinuousClock.now
    /// A task will write the cache behind soon.
    var isFlushScheduled = false
    var modeObservers: [Int: AsyncStream<TrackerModes>.Continuation] = [:]
    var bulletinObservers: [Int: AsyncStream<TrackerBulletin>.Continuation] = [:]
    var nextObserver = 0
  }

  /// The cards, per topic.
  public let cache: CardCache
  /// The topics of the upstream services whose cards the tracker shows, each once.
  public let topics: [String]
  /// The largest clock difference between broker and client the tracker corrects for: 24 h.
  public static let maximumSkewMillis: Int64 = 86_400_000
  private let configuration: Configuration
  private let plugins: [PayloadKind: any CardPlugin]
  private let state = Mutex(State())

  /// A tracker over `topics` of `cache`; it publishes the cached cards at once, offline since
  /// the cache last heard from the broker of them (the latest arrival of their cards or
  /// "verified at" time): a client restarted during an outage marks cards cached long ago
  /// stale at once, not only after `staleAfterOffline` more. A topic given more than once
  /// counts once (`pushline watch --topic a --topic a`), in the place it first has.
  public init(cache: CardCache, topics: [String], configuration: Configuration = Configuration()) {
    self.cache = cache
    var seen = Set<String>()
    self.topics = topics.filter { seen.insert($0).inserted }
    self.configuration = configuration
    plugins = Dictionary(configuration.plugins.map { ($0.kind, $0) }, uniquingKeysWith: { first, _ in first })
    // The last correction stored: a client restarted offline expires cards by the broker's clock.
    if let skew = cache.clockSkewMillis {
      state.withLock { ($0.skewMillis, $0.isSkewMeasured) = (max(-Self.maximumSkewMillis, min(skew, Self.maximumSkewMillis)), true) }
    }
    // A contact after now (the clock was set back) counts as now.
    let offlineSince = lastContactMillis().map { min($0, configuration.nowMillis()) }
    state.withLock { $0.connection.offlineSinceMillis = offlineSince }
    // Which card forced the status mode is not stored: the cached cards choose it again.
    let forced = Self.lastToForce(in: cache, topics: self.topics)
    let announced = Self.cachedBulletins(in: cache, topics: self.topics)
    state.withLock { ($0.forced, $0.announced) = (forced, announced) }
    publish()
  }

  /// When the client last heard from the broker of its topics, by its own clock: the latest of
  /// their cards' arrivals and their "verified at" times (the broker's clock, less the skew);
  /// `nil` when the cache holds nothing of them.
  private func lastContactMillis() -> Int64? {
    let skew = state.withLock { $0.skewMillis }
    let now = configuration.nowMillis()
    return topics.compactMap { cache.topic($0) }.flatMap { topic in
      let verified = Self.clientMillis(verifiedAt: topic.verifiedAtMillis, skew: skew, nowMillis: now)
      return topic.cards.values.map(\.receivedAtMillis) + (verified.map { [$0] } ?? [])
    }.max()
  }

  /// The card of `topics` in `cache` that forces the status mode when a tracker starts from
  /// the cache: of the cards asking to, the one that arrived last, as ``take(_:into:nowMillis:)``
  /// picks among arriving cards — the latest `receivedAtMillis`; among cards received together
  /// (one batch), the later topic in `topics`, standing for the batch's order, then the higher
  /// offset, in which a topic's changes apply. Like an arriving card it forces only while it is
  /// shown (valid, unexpired, of an enabled plugin), and a later card that is not shown leaves
  /// none forcing, as it did before the restart.
  ///
  /// The cache does not say which card forced before: one whose forcing ended without it
  /// changing — a later card took over and then stopped asking, or a snapshot in parts began
  /// without it — forces again, as it would were the cards arriving now.
  private static func lastToForce(in cache: CardCache, topics: [String]) -> Forced? {
    let order = Dictionary(uniqueKeysWithValues: topics.enumerated().map { ($1, $0) })
    return cache.cards(in: topics)
      .filter { $0.card.shouldForceSwitchStatusMode == true }
      .max { lhs, rhs in
        (lhs.receivedAtMillis, order[lhs.topic] ?? 0, lhs.offset) < (rhs.receivedAtMillis, order[rhs.topic] ?? 0, rhs.offset)
      }
      .map { Forced(topic: $0.topic, cardID: $0.card.cardID, offset: $0.offset) }
  }

  /// The versions of the bulletins of `topics` in `cache`, by ``key(_:_:)``: a bulletin cached
  /// before a restart was announced when it came, or not shown then, so a snapshot that brings
  /// it again at that version announces nothing, as without the restart (bulletins are
  /// announced once per version); a new version, or a new epoch's, is announced as ever. Cards
  /// awaiting a snapshot in parts are left out, since they may be of the topic's epoch before.
  private static func cachedBulletins(in cache: CardCache, topics: [String]) -> [String: Version] {
    var versions: [String: Version] = [:]
    for name in topics {
      guard let topic = cache.topic(name), let epoch = topic.epoch else { continue }
      for (cardID, cached) in topic.cards where cached.card.cardType == .bulletin && !topic.awaitingSnapshot.contains(cardID) {
        versions[key(name, cardID)] = Version(epoch: epoch, offset: cached.offset)
      }
    }
    return versions
  }

  /// The modes now (computed on the spot if updates arrived since the last publication).
  public var modes: TrackerModes {
    if state.withLock({ $0.generation != $0.publishedGeneration }) { publish() }
    return state.withLock { $0.modes }
  }

  /// The modes as they change, starting with the current ones. Only the latest value is kept
  /// for a slow consumer.
  public func modeUpdates() -> AsyncStream<TrackerModes> {
    let (stream, continuation) = AsyncStream<TrackerModes>.makeStream(bufferingPolicy: .bufferingNewest(1))
    let id = state.withLock { state in
      defer { state.nextObserver += 1 }
      state.modeObservers[state.nextObserver] = continuation
      continuation.yield(state.modes)
      return state.nextObserver
    }
    continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.modeObservers.removeValue(forKey: id) } }
    return stream
  }

  /// Bulletins as they arrive: each new version of a valid bulletin card, once.
  public func bulletins() -> AsyncStream<TrackerBulletin> {
    let (stream, continuation) = AsyncStream<TrackerBulletin>.makeStream(bufferingPolicy: .bufferingNewest(64))
    let id = state.withLock { state in
      defer { state.nextObserver += 1 }
      state.bulletinObservers[state.nextObserver] = continuation
      return state.nextObserver
    }
    continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.bulletinObservers.removeValue(forKey: id) } }
    return stream
  }

  /// What one update of a batch did to its topic, with the clock correction its server time
  /// gives.
  private struct Step {
    var topic: String
    var epoch: Int64
    var outcome: TopicCache.Outcome
    var skew: SkewSample?
  }

  /// The broker's clock minus the client's as one server time gives it, and whether that time
  /// was read as it was sent (``isSentNow(_:)``) or may be older.
  private struct SkewSample {
    var millis: Int64
    var isCurrent: Bool
  }

  /// Applies updates from the broker to the cache and announces new bulletins at once; the
  /// modes follow in a task of their own, so that a burst of updates costs one
  /// recomputation, not one per update (the mode stream keeps only the latest value anyway).
  ///
  /// A batch counts as its updates applied one by one, in order, and is observed as a whole:
  /// each card's last change in it wins, so a card it brings and takes away again is neither
  /// announced nor left forcing the status mode, and a bulletin it brings twice is announced
  /// once, at its last version.
  public func apply(_ updates: [TopicUpdate]) {
    let now = configuration.nowMillis()
    let steps = updates.map { update in
      // A server time past the correction's bounds is a broken clock's: no verification.
      var verified = update
      if let serverTime = update.serverTimeMillis, Self.skew(serverTimeMillis: serverTime, nowMillis: now).map({ abs($0) >= Self.maximumSkewMillis }) ?? true {
        verified.serverTimeMillis = nil
      }
      return Step(
        topic: update.topic, epoch: update.epoch, outcome: cache.apply(verified, receivedAtMillis: now),
        skew: update.serverTimeMillis.flatMap { Self.skew(serverTimeMillis: $0, nowMillis: now) }.map {
          SkewSample(millis: $0, isCurrent: Self.isSentNow(update))
        })
    }
    let (bulletins, bulletinObservers, schedule, flush) = state.withLock { state in
      let bulletins = take(steps, into: &state, nowMillis: now)
      if steps.contains(where: { $0.skew != nil }) { cache.noteClockSkew(state.skewMillis) }
      let flush = !state.isFlushScheduled
      state.isFlushScheduled = true
      state.generation += 1
      let schedule = !state.isPublishScheduled && !state.modeObservers.isEmpty
      if schedule { state.isPublishScheduled = true }
      return (bulletins, Array(state.bulletinObservers.values), schedule, flush)
    }
    if flush {
      Task {
        try? await Task.sleep(for: self.configuration.flushInterval)
        self.state.withLock { $0.isFlushScheduled = false }
        // A failed write keeps its topics for the next one.
        try? self.cache.flush()
      }
    }
    for bulletin in bulletins { for observer in bulletinObservers { observer.yield(bulletin) } }
    if schedule {
      Task {
        let due = self.state.withLock { $0.lastPublished } + self.configuration.minimumPublishInterval
        if due > ContinuousClock.now { try? await Task.sleep(until: due) }
        self.state.withLock { $0.isPublishScheduled = false }
        self.publish()
      }
    }
  }

  /// Takes a batch's steps into `state` in order — the clock correction, the cards forcing
  /// the status mode, the bulletins announced — and returns the bulletins to announce, in the
  /// order their cards came: those of the cards whose last change in the batch brought a new
  /// version of a shown bulletin.
  private func take(_ steps: [Step], into state: inout State, nowMillis: Int64) -> [TrackerBulletin] {
    var bulletins: [String: (order: Int, version: Version, bulletin: TrackerBulletin)] = [:]
    var order = 0
    for step in steps {
      let topic = step.topic
      if let skew = step.skew { Self.correct(&state, by: skew) }
      // A card that leaves is forgotten: announced again if it comes back, and no memory of
      // it kept; nor does it force the status mode if it comes back without asking. A
      // snapshot may start a new epoch, whose offsets say nothing of the old one's.
      for cardID in step.outcome.removed {
        let key = Self.key(topic, cardID)
        state.announced[key] = nil
        bulletins[key] = nil
        if state.forced?.topic == topic, state.forced?.cardID == cardID { state.forced = nil }
      }
      if let forced = state.forced, step.outcome.replaced, forced.topic == topic { state.forced = nil }
      for cached in step.outcome.upserted.sorted(by: { $0.offset < $1.offset }) {
        let key = Self.key(topic, cached.card.cardID)
        let asksToForce = cached.card.shouldForceSwitchStatusMode == true
        if asksToForce, state.forced.map({ $0.offset < cached.offset || $0.topic != topic }) ?? true {
          state.forced = Forced(topic: topic, cardID: cached.card.cardID, offset: cached.offset)
        } else if !asksToForce, state.forced?.topic == topic, state.forced?.cardID == cached.card.cardID {
          state.forced = nil  // its new version no longer asks
        }
        bulletins[key] = nil  // a version before this one, if the batch brought one, is superseded
        let version = Version(epoch: step.epoch, offset: cached.offset)
        guard cached.card.cardType == .bulletin, state.announced[key] != version,
          let kind = isShown(cached.card, nowMillis: Self.brokerMillis(nowMillis, skew: state.skewMillis))
        else { continue }
        let plugin = plugins[kind]!
        let bulletin = TrackerBulletin(
          topic: topic, card: cached.card, offset: cached.offset, textWithAmounts: plugin.bulletinText(cached.card, privacy: false),
          textWithoutAmounts: plugin.bulletinText(cached.card, privacy: true))
        bulletins[key] = (order, version, bulletin)
        order += 1
      }
    }
    for (key, announced) in bulletins { state.announced[key] = announced.version }
    return bulletins.values.sorted { $0.order < $1.order }.map(\.bulletin)
  }

  /// Corrects the client's clock by the broker's, `serverTimeMillis` read now (a handshake's),
  /// and re-evaluates expiry with it: the cards shown from the cache before the first update
  /// arrives expire by the broker's clock, not a wrong local one.
  public func correctClock(serverTimeMillis: Int64) {
    guard let skew = Self.skew(serverTimeMillis: serverTimeMillis, nowMillis: configuration.nowMillis()) else { return }
    state.withLock { Self.correct(&$0, by: SkewSample(millis: skew, isCurrent: true)) }
    cache.noteClockSkew(skew)
    publish()
  }

  /// Shows or hides amounts everywhere: in the modes at once; a bulletin carries both of its
  /// texts, for its screen to pick by ``TrackerModes/privacy`` (see ``TrackerBulletin``).
  public func setPrivacy(_ on: Bool) {
    state.withLock { $0.privacy = on }
    publish()
  }

  /// Records the connection's state (the connection manager calls this).
  public func setConnection(_ connection: ConnectionState) {
    state.withLock { $0.connection = connection }
    publish()
  }

  /// Re-evaluates expiry and staleness as time passes; call it every second or so.
  public func refresh() { publish() }

  /// The broker's clock minus the client's, `serverTimeMillis - nowMillis`, held within
  /// ±``maximumSkewMillis``; `nil` when the difference does not fit in `Int64` (a server time
  /// near either end of it, which no clock gives).
  private static func skew(serverTimeMillis: Int64, nowMillis: Int64) -> Int64? {
    let (difference, overflow) = serverTimeMillis.subtractingReportingOverflow(nowMillis)
    return overflow ? nil : min(max(difference, -maximumSkewMillis), maximumSkewMillis)
  }

  /// Whether `update`'s server time is the broker's clock as it was sent (PROTOCOL.md 3.3):
  /// a watermark's, or an update's short of complete (a live piece, a middle part of a snapshot
  /// or catch-up). A snapshot's (its first part's too) is when it was made; so is a complete
  /// update's with changes that newer ones follow — the last part of a snapshot or catch-up,
  /// which looks like a live update that left nothing queued.
  private static func isSentNow(_ update: TopicUpdate) -> Bool {
    !update.isSnapshot && (update.changes.isEmpty || !update.isComplete)
  }

  /// Takes `sample` into the correction. A time read as it was sent (the handshake's, or as
  /// ``isSentNow(_:)`` tells) sets it either way, so a client clock that was moved is followed.
  /// One that may be older can only be early, giving too low a skew: it raises a measured
  /// correction and never lowers it — a catch-up that waited behind a slow connection had
  /// pulled it back by the wait, showing expired cards and announcing expired bulletins.
  private static func correct(_ state: inout State, by sample: SkewSample) {
    state.skewMillis = sample.isCurrent || !state.isSkewMeasured ? sample.millis : max(state.skewMillis, sample.millis)
    state.isSkewMeasured = true
  }

  /// A "verified at" time (the broker's clock) by the client's: the inverse shift of the
  /// correction, at most now; `nil` when there is none, or when it would lie more than a
  /// second ahead of the client's clock — a correction that moved that far since (a broken
  /// clock's, held at its bound) says nothing of when the broker last spoke, and must not keep
  /// cards fresh. (Within a second: the correction's own jitter between updates.)
  private static func clientMillis(verifiedAt brokerMillis: Int64?, skew: Int64, nowMillis: Int64) -> Int64? {
    brokerMillis.map { Self.brokerMillis($0, skew: -skew) }.flatMap { $0 <= Self.brokerMillis(nowMillis, skew: 1000) ? min($0, nowMillis) : nil }
  }

  /// A card's key among the announced bulletins.
  private static func key(_ topic: String, _ cardID: String) -> String { topic + "\u{0}" + cardID }

  /// The broker's clock when the client's reads `nowMillis`, saturating at the ends of `Int64`
  /// (only an injected clock gets there).
  private static func brokerMillis(_ nowMillis: Int64, skew: Int64) -> Int64 {
    let (sum, overflow) = nowMillis.addingReportingOverflow(skew)
    return overflow ? (skew < 0 ? .min : .max) : sum
  }

  /// The payload kind of `card` if it is shown at `nowMillis` (broker time), `nil` otherwise.
  private func isShown(_ card: TrackerCard, nowMillis: Int64) -> PayloadKind? {
    guard card.isValid, let payload = card.payload, let kind = PayloadKind(payload), !configuration.disabledKinds.contains(kind),
      let plugin = plugins[kind], plugin.isShowable(card)
    else { return nil }
    if let expiresAt = card.expiresAt, expiresAt <= nowMillis / 1000 { return nil }
    return kind
  }

  /// Recomputes the modes from the cache and hands them to every observer.
  private func publish() {
    let now = configuration.nowMillis()
    let generation = state.withLock { $0.generation }  // read before the cache: never claims a newer state
    let cards = cache.cards(in: topics)
    let verified = Dictionary(uniqueKeysWithValues: topics.map { ($0, cache.topic($0)?.verifiedAtMillis) })
    let (modes, modeObservers) = state.withLock { state -> (TrackerModes, [AsyncStream<TrackerModes>.Continuation]) in
      // A publish that read the cache before another one's stores nothing: its modes are older.
      guard generation >= state.publishedGeneration else { return (state.modes, []) }
      let brokerNow = Self.brokerMillis(now, skew: state.skewMillis)
      let items = cards.compactMap { cached -> TrackerItem? in
        guard let kind = isShown(cached.card, nowMillis: brokerNow) else { return nil }
        let outage = cached.card.outageState.flatMap { $0.isInOutage == true ? Staleness.serviceOutage(message: $0.message) : nil }
        let verifiedAt = Self.clientMillis(verifiedAt: verified[cached.topic] ?? nil, skew: state.skewMillis, nowMillis: now)
        // Offline, a card goes stale once the broker has not spoken of it for the threshold:
        // counted from when the connection went offline, or from its arrival or its topic's
        // verification since (a reconnect whose other subscriptions are still unanswered).
        let offline = state.connection.offlineSinceMillis.flatMap { since -> Staleness? in
          let heard = max(since, cached.receivedAtMillis, verifiedAt ?? .min)
          return now - heard >= configuration.staleAfterOffline.milliseconds ? .offline(sinceMillis: since) : nil
        }
        return TrackerItem(
          topic: cached.topic, card: cached.card, kind: kind,
          text: plugins[kind]!.browseText(cached.card, privacy: state.privacy),
          lastUpdatedAt: cached.card.lastUpdatedAt ?? cached.receivedAtMillis / 1000, staleness: outage ?? offline,
          verifiedAtMillis: verifiedAt)
      }.sorted(by: Self.ranksBefore)
      let browse = items.filter { ($0.card.cardType ?? .browse) == .browse }
      let forced = state.forced.flatMap { forced in browse.first { $0.topic == forced.topic && $0.cardID == forced.cardID } }
      let status = forced ?? browse.max { lhs, rhs in
        let left = Self.rank(lhs.card.statusModePriority ?? lhs.card.priority)
        let right = Self.rank(rhs.card.statusModePriority ?? rhs.card.priority)
        return left != right ? left < right : Self.ranksBefore(rhs, lhs)
      }
      state.modes = TrackerModes(status: status, browse: browse, privacy: state.privacy, connection: state.connection)
      state.publishedGeneration = generation
      state.lastPublished = .now
      return (state.modes, Array(state.modeObservers.values))
    }
    for observer in modeObservers { observer.yield(modes) }
  }

  /// A priority as it ranks: NaN, which compares with nothing, ranks lowest, so that the
  /// order stays a total one and the other cards' places do not depend on where it falls.
  private static func rank(_ priority: Double) -> Double {
    priority.isNaN ? -.infinity : priority
  }

  /// The ranking: priority, highest first (NaN lowest); then cardID; then topic.
  static func ranksBefore(_ lhs: TrackerItem, _ rhs: TrackerItem) -> Bool {
    let (left, right) = (rank(lhs.card.priority), rank(rhs.card.priority))
    if left != right { return left > right }
    if lhs.cardID != rhs.cardID { return lhs.cardID < rhs.cardID }
    return lhs.topic < rhs.topic
  }
}
