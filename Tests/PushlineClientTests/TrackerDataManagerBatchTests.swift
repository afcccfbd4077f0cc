import PushlineClient
import PushlineSchema
import PushlineTesting
import Testing

/// How a batch takes away the card it brings.
enum TakenAway: CaseIterable, Sendable {
  case byALaterRemoval
  case byALaterSnapshot
  case byTheSameUpdate

  /// A batch of updates of `topic` that brings `card` and takes it away; its position ends
  /// below 4.
  func batch(bringing card: TrackerCard, to topic: String) -> [TopicUpdate] {
    switch self {
    case .byALaterRemoval: [update(topic, from: 1, [card], snapshot: true), update(topic, from: 2, [], removing: [card.cardID])]
    case .byALaterSnapshot: [update(topic, from: 1, [card], snapshot: true), update(topic, from: 2, [], snapshot: true)]
    case .byTheSameUpdate: [update(topic, from: 1, [], snapshot: true), update(topic, from: 2, [card], removing: [card.cardID])]
    }
  }
}

@Suite("TrackerDataManager: a batch of updates counts as applied in order", .timeLimit(.minutes(1)))
struct TrackerDataManagerBatchTests {
  let clock = ManualWallClock()

  func tracker() throws -> TrackerDataManager {
    TrackerDataManager(
      cache: try CardCache(persistence: nil), topics: ["earnings", "incentives"], configuration: .init(nowMillis: clock.function))
  }

  /// A bulletin card a batch brings and takes away is not announced: the next bulletin
  /// announced is the one of a later batch.
  @Test(arguments: TakenAway.allCases)
  func aBulletinABatchBringsAndTakesAwayIsNotAnnounced(takenAway: TakenAway) async throws {
    let tracker = try tracker()
    var bulletins = tracker.bulletins().makeAsyncIterator()
    tracker.apply(takenAway.batch(bringing: card("gone", priority: 0, kind: .recentTrips, type: .bulletin), to: "earnings"))
    tracker.apply([update("earnings", from: 4, [card("next", priority: 0, kind: .recentTrips, type: .bulletin)])])
    #expect(await bulletins.next()?.card.cardID == "next")
  }

  /// A batch announces each bulletin card at its last version: one taken away and brought
  /// back again within it is announced once, as it came back.
  @Test func aBatchAnnouncesEachBulletinAtItsLastVersion() async throws {
    let tracker = try tracker()
    var bulletins = tracker.bulletins().makeAsyncIterator()
    let bulletin = card("trip-done", priority: 0, kind: .recentTrips, type: .bulletin)
    tracker.apply([
      update("earnings", from: 1, [bulletin], snapshot: true), update("earnings", from: 2, [], removing: ["trip-done"]),
      update("earnings", from: 3, [bulletin]),
    ])
    tracker.apply([update("earnings", from: 4, [card("next", priority: 0, kind: .recentTrips, type: .bulletin)])])
    #expect(await bulletins.next()?.offset == 3)
    #expect(await bulletins.next()?.card.cardID == "next")
  }

  /// A card a batch brings asking to force the switch, and takes away, forces nothing: when
  /// it comes back without asking, the status mode still picks by priority.
  @Test(arguments: TakenAway.allCases)
  func aCardABatchBringsAndTakesAwayDoesNotForceTheStatus(takenAway: TakenAway) throws {
    let tracker = try tracker()
    tracker.apply([update("earnings", from: 1, [card("today", priority: 1, statusPriority: 10)], snapshot: true)])
    tracker.apply(takenAway.batch(bringing: card("quest", priority: 3, kind: .dxgyProgress, force: true), to: "incentives"))
    #expect(tracker.modes.status?.cardID == "today")
    tracker.apply([update("incentives", from: 4, [card("quest", priority: 3, kind: .dxgyProgress)])])
    #expect(tracker.modes.status?.cardID == "today")
  }
}
