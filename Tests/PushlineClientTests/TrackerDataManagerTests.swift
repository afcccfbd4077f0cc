import Foundation
import PushlineClient
import PushlineSchema
import PushlineWire
import PushlineTesting
import Testing

@Suite("TrackerDataManager: validation, ranking, modes, privacy, expiry, staleness, plugins", .timeLimit(.minutes(1)))
struct TrackerDataManagerTests {
  let clock = ManualWallClock()

  func tracker(disabled: Set<PayloadKind> = [], staleAfter: Duration = .seconds(30)) throws -> TrackerDataManager {
    TrackerDataManager(
      cache: try CardCache(persistence: nil), topics: ["earnings", "incentives"],
      configuration: .init(disabledKinds: disabled, staleAfterOffline: staleAfter, nowMillis: clock.function))
  }

  @Test func onlyValidUnexpiredHandledCardsAreShownRankedByPriorityThenID() throws {
    let tracker = try tracker()
    var noPayload = TrackerCard(cardID: "no-payload", priority: 99, isValid: true)
    noPayload.cardType = .browse
    var unknownPayload = TrackerCard(cardID: "unknown-payload", priority: 98, isValid: true)
    unknownPayload.payload = try TrackerCardPayload(serializedBytes: [0x32, 0x00])  // a section from a newer schema
    tracker.apply([
      update("earnings", from: 1, [
        card("b", priority: 5), card("a", priority: 5), card("top", priority: 9), card("invalid", priority: 50, valid: false),
        card("expired", priority: 40, expiresAt: clock.now / 1000), noPayload, unknownPayload,
      ], snapshot: true),
      update("incentives", from: 1, [card("quest", priority: 7, kind: .dxgyProgress)], snapshot: true),
    ])
    #expect(tracker.modes.browse.map(\.cardID) == ["top", "quest", "a", "b"])
  }

  @Test func aCardDisappearsAtItsExpirySecondWithoutNetwork() throws {
    let tracker = try tracker()
    let expiry = clock.now / 1000 + 10
    tracker.apply([update("earnings", from: 1, [card("a", priority: 1, expiresAt: expiry)], snapshot: true)])
    clock.advance(by: .seconds(9))
    tracker.refresh()
    #expect(tracker.modes.browse.map(\.cardID) == ["a"])
    clock.advance(by: .seconds(1))
    tracker.refresh()
    #expect(tracker.modes.browse.isEmpty)
  }

  @Test func expiryUsesTheBrokersClock() throws {
    let tracker = try tracker()
    let expiry = clock.now / 1000 + 100
    var snapshot = update("earnings", from: 1, [card("a", priority: 1, expiresAt: expiry)], snapshot: true)
    snapshot.serverTimeMillis = clock.now + 100_000  // the broker is 100 s ahead: the card has already expired
    tracker.apply([snapshot])
    #expect(tracker.modes.browse.isEmpty)
  }

  /// A server time that may be old does not pull the correction back: a catch-up's complete
  /// last part that newer changes follow keeps the time the catch-up was made at (PROTOCOL.md
  /// 3.3), here 20 s before it arrives. Its bulletin and card, expired 5 s ago by the broker's
  /// clock, are neither announced nor shown, and the correction stays at 0 (it had become
  /// −20 s, bringing them back).
  @Test func anOldServerTimeDoesNotPullTheCorrectionBack() async throws {
    let tracker = try tracker()
    var bulletins = tracker.bulletins().makeAsyncIterator()
    var snapshot = update("earnings", from: 1, [], snapshot: true)
    snapshot.serverTimeMillis = clock.now
    tracker.apply([snapshot])
    clock.advance(by: .seconds(20))
    let expired = (clock.now - 5000) / 1000
    var catchUp = update("earnings", from: 2, [
      card("trip-done", priority: 0, kind: .recentTrips, type: .bulletin, expiresAt: expired), card("today", priority: 1, expiresAt: expired),
    ])
    (catchUp.serverTimeMillis, catchUp.complete) = (clock.now - 20_000, true)
    tracker.apply([catchUp])
    tracker.refresh()
    #expect(tracker.modes.browse.isEmpty)
    #expect(abs(try #require(tracker.cache.clockSkewMillis)) < 1000)
    tracker.apply([update("earnings", from: 4, [card("next", priority: 0, kind: .recentTrips, type: .bulletin)])])
    #expect(await bulletins.next()?.card.cardID == "next")  // not "trip-done"
  }

  /// "Verified at" is told by the client's clock, as the tracker's other times are: the
  /// broker's watermark time, an hour behind the client's clock, less the correction.
  @Test func verifiedAtIsByTheClientsClock() throws {
    let tracker = try tracker()
    var snapshot = update("earnings", from: 1, [card("a", priority: 1)], snapshot: true)
    snapshot.serverTimeMillis = clock.now - 3_600_000
    tracker.apply([snapshot])
    clock.advance(by: .seconds(5))
    var watermark = update("earnings", from: 2, [])
    (watermark.serverTimeMillis, watermark.complete) = (clock.now - 3_600_000, true)
    tracker.apply([watermark])
    #expect(tracker.modes.browse.map(\.verifiedAtMillis) == [clock.now])
  }

  /// A server time further off than the correction's bound is a broken clock's: it verifies
  /// nothing, and an earlier verification that the correction, held at its bound, would move
  /// ahead of the client's clock says nothing either — offline, the card goes stale as ever.
  /// (Such times had made "verified at" the far future, and the card fresh for good.)
  @Test(arguments: [Int64.max, 2_115_000_000_000, 0])
  func aBrokenServerTimeVerifiesNothing(serverTime: Int64) throws {
    let tracker = try tracker(staleAfter: .seconds(2))
    var snapshot = update("earnings", from: 1, [card("today", priority: 1)], snapshot: true)
    (snapshot.serverTimeMillis, snapshot.complete) = (clock.now, true)
    tracker.apply([snapshot])
    var watermark = update("earnings", from: 2, [])
    (watermark.serverTimeMillis, watermark.complete) = (serverTime, true)
    tracker.apply([watermark])
    let since = clock.now
    tracker.setConnection(ConnectionState(phase: .connecting(attempt: 1), offlineSinceMillis: since))
    clock.advance(by: .seconds(2))
    tracker.refresh()
    #expect(tracker.modes.browse.map(\.staleness) == [.offline(sinceMillis: since)])
  }

  /// The correction survives a restart: a client restarted during an outage, before any
  /// handshake, still expires a card by the broker's clock, 100 s ahead of its own.
  @Test func theClockCorrectionSurvivesARestart() throws {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-skew-\(UInt32.random(in: 0...UInt32.max))/cache.sqlite").path
    defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
    let configuration = TrackerDataManager.Configuration(nowMillis: clock.function)
    do {
      let cache = try CardCache(persistence: SQLiteCachePersistence(path: path))
      let tracker = TrackerDataManager(cache: cache, topics: ["earnings"], configuration: configuration)
      var snapshot = update("earnings", from: 1, [card("a", priority: 1, expiresAt: clock.now / 1000 + 150)], snapshot: true)
      snapshot.serverTimeMillis = clock.now + 100_000
      tracker.apply([snapshot])
      try cache.flush()
    }
    clock.advance(by: .seconds(60))  // 60 s later by the client's clock, 160 s by the broker's
    let restarted = TrackerDataManager(
      cache: try CardCache(persistence: SQLiteCachePersistence(path: path)), topics: ["earnings"], configuration: configuration)
    #expect(restarted.modes.browse.isEmpty)
  }

  /// The broker's server time corrects the client's clock by at most a day either way, and a
  /// server time so far off that its difference from the client's clock overflows `Int64` is
  /// ignored: a broker's garbage clock cannot crash the tracker, nor expire every card.
  @Test func theClockCorrectionStaysWithinADayAndIgnoresAServerTimeThatOverflows() throws {
    let tracker = try tracker()
    let now = clock.now / 1000
    var snapshot = update("earnings", from: 1, [
      card("soon", priority: 4, expiresAt: now + 100), card("tomorrow", priority: 3, expiresAt: now + 25 * 3600),
      card("an-hour-ago", priority: 2, expiresAt: now - 3600), card("yesterday", priority: 1, expiresAt: now - 25 * 3600),
    ], snapshot: true)
    snapshot.serverTimeMillis = .min
    tracker.apply([snapshot])
    #expect(tracker.modes.browse.map(\.cardID) == ["soon", "tomorrow"])
    func serverTime(_ millis: Int64) {
      var watermark = update("earnings", from: 5, [])
      watermark.serverTimeMillis = millis
      tracker.apply([watermark])
    }
    serverTime(.max)  // a day ahead, not 292 million years
    #expect(tracker.modes.browse.map(\.cardID) == ["tomorrow"])
    serverTime(0)  // 1970: a day behind
    #expect(tracker.modes.browse.map(\.cardID) == ["soon", "tomorrow", "an-hour-ago"])
    serverTime(.min)  // ignored: still a day behind
    #expect(tracker.modes.browse.map(\.cardID) == ["soon", "tomorrow", "an-hour-ago"])
  }

  /// `pushline watch --topic a --topic a` follows `a` once.
  @Test func aTopicGivenTwiceCountsOnce() throws {
    let tracker = TrackerDataManager(
      cache: try CardCache(persistence: nil), topics: ["earnings", "incentives", "earnings"],
      configuration: .init(nowMillis: clock.function))
    #expect(tracker.topics == ["earnings", "incentives"])
    tracker.apply([update("earnings", from: 1, [card("today", priority: 1)], snapshot: true)])
    #expect(tracker.modes.browse.map(\.cardID) == ["today"])
  }

  /// A threshold past `Int64` milliseconds (some 292 million years) means never stale offline.
  @Test func aStalenessThresholdPastInt64MillisecondsIsNever() throws {
    let tracker = try tracker(staleAfter: .seconds(Int64.max))
    tracker.apply([update("earnings", from: 1, [card("today", priority: 1)], snapshot: true)])
    tracker.setConnection(ConnectionState(phase: .connecting(attempt: 1), offlineSinceMillis: clock.now))
    clock.advance(by: .seconds(10 * 365 * 86_400))
    tracker.refresh()
    #expect(tracker.modes.browse.map(\.staleness) == [nil])
  }

  @Test func statusPicksTheHighestStatusPriorityUntilACardForcesTheSwitch() throws {
    let tracker = try tracker()
    tracker.apply([
      update("earnings", from: 1, [card("today", priority: 1, statusPriority: 10), card("trip", priority: 9, statusPriority: 2)], snapshot: true)
    ])
    #expect(tracker.modes.status?.cardID == "today")
    tracker.apply([update("incentives", from: 1, [card("quest", priority: 3, kind: .dxgyProgress, force: true)], snapshot: true)])
    #expect(tracker.modes.status?.cardID == "quest")
    tracker.apply([update("incentives", from: 2, [], removing: ["quest"])])
    #expect(tracker.modes.status?.cardID == "today")
  }

  /// A forcing card whose new version no longer asks stops forcing, whether the broker sends
  /// its removal and return apart or coalesced into one update.
  @Test(arguments: [false, true]) func aForcingCardThatNoLongerAsksStopsForcing(inOneUpdate: Bool) throws {
    let tracker = try tracker()
    tracker.apply([
      update("earnings", from: 1, [card("today", priority: 1, statusPriority: 10)], snapshot: true),
      update("incentives", from: 1, [card("quest", priority: 3, kind: .dxgyProgress, force: true)], snapshot: true),
    ])
    #expect(tracker.modes.status?.cardID == "quest")
    let back = card("quest", priority: 3, kind: .dxgyProgress)
    if inOneUpdate {
      var update = TopicUpdate(topic: "incentives", epoch: 7, throughOffset: 3)
      update.changes = [CardChange(removing: "quest", offset: 2), CardChange(upserting: back, offset: 3)]
      tracker.apply([update])
    } else {
      tracker.apply([update("incentives", from: 2, [], removing: ["quest"]), update("incentives", from: 3, [back])])
    }
    #expect(tracker.modes.status?.cardID == "today")
  }

  /// A topic's new epoch starts its offsets over: a card forcing the switch in it wins over
  /// the one that forced it in the old epoch, at a higher offset.
  @Test func aSnapshotOfANewEpochForgetsTheOldForcedCard() throws {
    let tracker = try tracker()
    tracker.apply([
      update("earnings", from: 1, [card("today", priority: 9, statusPriority: 10)], snapshot: true),
      update("incentives", from: 40, [card("old-quest", priority: 3, kind: .dxgyProgress, force: true)], snapshot: true),
    ])
    #expect(tracker.modes.status?.cardID == "old-quest")
    tracker.apply([update("incentives", epoch: 8, from: 2, [card("new-quest", priority: 3, kind: .dxgyProgress, force: true)], snapshot: true)])
    #expect(tracker.modes.status?.cardID == "new-quest")
  }

  /// Which card forces the status mode is held in memory only: a tracker restarted from the
  /// cache takes the cached cards as arriving again, and the last to have arrived asking to
  /// force still forces — here the later of two, though its topic comes first.
  @Test func aForcingCardStillForcesAfterARestart() throws {
    let persistence = RecordingPersistence()
    let configuration = TrackerDataManager.Configuration(nowMillis: clock.function)
    let cache = try CardCache(persistence: persistence)
    let tracker = TrackerDataManager(cache: cache, topics: ["earnings", "incentives"], configuration: configuration)
    tracker.apply([update("incentives", from: 1, [card("quest", priority: 3, kind: .dxgyProgress, force: true)], snapshot: true)])
    clock.advance(by: .seconds(1))
    tracker.apply([
      update("earnings", from: 1, [card("today", priority: 1, statusPriority: 10), card("boost", priority: 2, force: true)], snapshot: true)
    ])
    #expect(tracker.modes.status?.cardID == "boost")
    try cache.flush()
    let restarted = TrackerDataManager(
      cache: try CardCache(persistence: persistence), topics: ["earnings", "incentives"], configuration: configuration)
    #expect(restarted.modes.status?.cardID == "boost")
  }

  @Test func bulletinsAreAnnouncedOncePerVersionAndStayOutOfBrowse() async throws {
    let tracker = try tracker()
    var bulletins = tracker.bulletins().makeAsyncIterator()
    let bulletin = card("trip-done", priority: 0, kind: .recentTrips, type: .bulletin)
    tracker.apply([update("earnings", from: 1, [bulletin], snapshot: true)])
    tracker.apply([update("earnings", from: 1, [bulletin], snapshot: true)])  // the same version again, after a reconnect
    tracker.apply([update("earnings", from: 2, [bulletin])])
    #expect(await bulletins.next()?.offset == 1)
    #expect(await bulletins.next()?.text(privacy: false) == "trip-done done · $10.00")
    #expect(tracker.modes.browse.isEmpty)
  }

  /// A broker that lost its history starts a new epoch and numbers offsets from 1 again: a
  /// bulletin at the offset it had in the old epoch is a new version, announced again.
  @Test func aBulletinOfANewEpochIsAnnouncedAtAnOffsetItHadBefore() async throws {
    let tracker = try tracker()
    var bulletins = tracker.bulletins().makeAsyncIterator()
    let bulletin = card("trip-done", priority: 0, kind: .recentTrips, type: .bulletin)
    tracker.apply([update("earnings", from: 1, [bulletin], snapshot: true)])
    tracker.apply([update("earnings", epoch: 8, from: 1, [bulletin], snapshot: true)])
    tracker.apply([update("earnings", epoch: 8, from: 2, [card("next", priority: 0, kind: .recentTrips, type: .bulletin)])])
    #expect(await bulletins.next()?.offset == 1)
    #expect(await bulletins.next()?.card.cardID == "trip-done")  // not "next"
  }

  /// Which bulletins were announced is not stored, but the cache holds them: a tracker
  /// restarted from it announces nothing when its topic comes back as a snapshot bringing a
  /// bulletin at the version it had (it had announced it again), and a new epoch's as ever.
  @Test func aBulletinIsNotAnnouncedAgainAfterARestart() async throws {
    let persistence = RecordingPersistence()
    let configuration = TrackerDataManager.Configuration(nowMillis: clock.function)
    let cache = try CardCache(persistence: persistence)
    let bulletin = card("trip-done", priority: 0, kind: .recentTrips, type: .bulletin)
    TrackerDataManager(cache: cache, topics: ["earnings"], configuration: configuration).apply([
      update("earnings", from: 1, [bulletin], snapshot: true)
    ])
    try cache.flush()
    let restarted = TrackerDataManager(cache: try CardCache(persistence: persistence), topics: ["earnings"], configuration: configuration)
    var bulletins = restarted.bulletins().makeAsyncIterator()
    restarted.apply([update("earnings", from: 1, [bulletin], snapshot: true)])
    restarted.apply([update("earnings", from: 2, [card("next", priority: 0, kind: .recentTrips, type: .bulletin)])])
    #expect(await bulletins.next()?.card.cardID == "next")  // not "trip-done"
    restarted.apply([update("earnings", epoch: 8, from: 1, [bulletin], snapshot: true)])
    #expect(await bulletins.next()?.card.cardID == "trip-done")
  }

  @Test func privacyHidesEveryAmount() throws {
    let tracker = try tracker()
    tracker.apply([update("earnings", from: 1, [card("today", priority: 1, amount: "$123.45")], snapshot: true)])
    #expect(tracker.modes.status?.text == "today · $123.45")
    tracker.setPrivacy(true)
    #expect(tracker.modes.status?.text == "today · ••••")
    #expect(tracker.modes.browse.allSatisfy { !$0.text.contains("$") })
  }

  @Test func cardsTurnStaleOfflinePastTheThresholdOrInAnOutage() throws {
    let tracker = try tracker(staleAfter: .seconds(30))
    var outage = card("quest", priority: 1, kind: .dxgyProgress)
    outage.outageState = OutageState()
    outage.outageState?.isInOutage = true
    outage.outageState?.message = "incentives are delayed"
    tracker.apply([
      update("earnings", from: 1, [card("today", priority: 2)], snapshot: true), update("incentives", from: 1, [outage], snapshot: true),
    ])
    #expect(tracker.modes.browse.map(\.staleness) == [nil, .serviceOutage(message: "incentives are delayed")])
    let since = clock.now
    tracker.setConnection(ConnectionState(phase: .backingOff(untilMillis: since + 1000, reason: "cut"), offlineSinceMillis: since))
    clock.advance(by: .seconds(29))
    tracker.refresh()
    #expect(tracker.modes.browse[0].staleness == nil)
    clock.advance(by: .seconds(1))
    tracker.refresh()
    #expect(tracker.modes.browse[0].staleness == .offline(sinceMillis: since))
    #expect(tracker.modes.browse[0].lastUpdatedAt == 1_799_999_000)
  }

  /// A reconnect that has an answer for one topic and not yet for the other is still offline,
  /// but the cards just heard of are not stale: only those the broker has not spoken of since
  /// the threshold are — here the incentives card, until its own topic is verified again.
  @Test func cardsHeardOfSinceGoingOfflineAreNotStale() throws {
    let tracker = try tracker()
    tracker.apply([
      update("earnings", from: 1, [card("today", priority: 2)], snapshot: true),
      update("incentives", from: 1, [card("quest", priority: 1, kind: .dxgyProgress)], snapshot: true),
    ])
    let since = clock.now
    tracker.setConnection(ConnectionState(phase: .connecting(attempt: 1), offlineSinceMillis: since))
    clock.advance(by: .seconds(60))
    tracker.apply([update("earnings", from: 2, [card("today", priority: 2)])])
    #expect(tracker.modes.browse.map(\.staleness) == [nil, .offline(sinceMillis: since)])
    clock.advance(by: .seconds(30))  // still offline, 30 s after earnings last spoke
    var watermark = update("incentives", from: 2, [])
    (watermark.serverTimeMillis, watermark.complete) = (clock.now, true)
    tracker.apply([watermark])
    #expect(tracker.modes.browse.map(\.staleness) == [.offline(sinceMillis: since), nil])
  }

  /// A NaN priority ranks lowest and the order stays total: the same cards rank the same way
  /// whatever order they arrive in.
  @Test func aNaNPriorityRanksLowestAndTheOrderStaysTotal() throws {
    let cards = [
      card("nan-1", priority: .nan), card("inf", priority: .infinity), card("one", priority: 1), card("nan-2", priority: .nan),
      card("minus-inf", priority: -.infinity), card("zero", priority: -0.0), card("two", priority: 2),
    ]
    for seed in 0..<20 {
      var random = SplitMix64(seed: UInt64(seed))
      let tracker = try tracker()
      tracker.apply([update("earnings", from: 1, cards.shuffled(using: &random), snapshot: true)])
      #expect(tracker.modes.browse.map(\.cardID) == ["inf", "two", "one", "zero", "minus-inf", "nan-1", "nan-2"], "seed \(seed)")
    }
  }

  @Test func aDisabledPluginHidesItsCardsAndNothingElse() throws {
    let tracker = try tracker(disabled: [.dxgyProgress])
    tracker.apply([
      update("earnings", from: 1, [card("today", priority: 1)], snapshot: true),
      update("incentives", from: 1, [card("quest", priority: 5, kind: .dxgyProgress, force: true)], snapshot: true),
    ])
    #expect(tracker.modes.browse.map(\.cardID) == ["today"])
    #expect(tracker.modes.status?.cardID == "today")
  }
}

@Suite("TrackerDataManager: writing the cache behind")
struct TrackerWriteBehindTests {
  /// Updates are written behind while the connection lasts, not only when it ends: a client
  /// killed after hours live restarts with recent cards.
  @Test(.timeLimit(.minutes(1))) func updatesAreWrittenBehindWhileLive() async throws {
    let persistence = RecordingPersistence()
    let cache = try CardCache(persistence: persistence)
    let tracker = TrackerDataManager(cache: cache, topics: ["t"], configuration: .init(flushInterval: .zero))
    tracker.apply([update("t", from: 1, [card("a", priority: 1)], snapshot: true)])
    var written = persistence.stored.makeAsyncIterator()
    #expect(await written.next()?.topics.map(\.position) == [1])
    tracker.apply([update("t", from: 2, [card("b", priority: 1)])])
    #expect(await written.next()?.topics.map(\.position) == [2])
  }
}
