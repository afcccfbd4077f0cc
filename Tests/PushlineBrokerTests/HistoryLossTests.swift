import Foundation
import Logging
@testable import PushlineBroker
import MetricsTestKit
import PushlineRPC
import PushlineSchema
import PushlineTesting
import Synchronization
import Testing

/// Positions ahead of their topic's top in its own epoch: proof that storage lost history.
@Suite("History lost by storage, seen by clients")
struct HistoryLossTests {
  let clock = ManualWallClock()
  let metrics = TestMetrics()
  let records = RecordingLogHandler.Records()

  var configuration: BrokerConfiguration {
    BrokerConfiguration(nowMillis: clock.function, metrics: BrokerMetrics(factory: metrics), logger: RecordingLogHandler.logger(into: records))
  }

  var errors: [(level: Logger.Level, message: String, metadata: Logger.Metadata)] {
    records.all.filter { $0.level == .error && $0.message == HistoryLossReport.message.description }
  }

  /// Each position ahead of its topic in the topic's epoch gets a snapshot and is counted; the
  /// lines logged come a minute apart at most, each with the count since the last. A position at
  /// the top, or in another epoch, is no sign of loss.
  @Test func positionsAheadOfTheirTopicAreCountedAndLoggedAMinuteApart() async throws {
    let broker = try await Broker(storage: InMemoryBrokerStorage(), configuration: configuration)
    var tops: [String: PublishResponse] = [:]
    for topic in ["t", "u", "v"] { tops[topic] = try await broker.publish(topic, [card("a", 1), card("b", 1)]) }
    func firstUpdate(_ topic: String, otherEpoch: Bool = false, ahead: Int64) throws -> EncodedTopicUpdate? {
      let top = try #require(tops[topic])
      // Through the broker: the topic's new epoch may be stored meanwhile, and its snapshot due.
      let subscription = try broker.subscribe(topic, epoch: top.epoch + (otherEpoch ? 1 : 0), offset: top.lastOffset + ahead)
      return try broker.readyUpdates(for: subscription).map(readOffTheWire).first
    }
    #expect(try firstUpdate("t", ahead: 0)?.isSnapshot == false)
    #expect(try firstUpdate("t", otherEpoch: true, ahead: 5)?.isSnapshot == true)
    #expect(try metrics.expectCounter("pushline_positions_ahead_total").totalValue == 0)

    #expect(try firstUpdate("t", ahead: 5)?.isSnapshot == true)
    #expect(try firstUpdate("u", ahead: 9)?.isSnapshot == true)
    #expect(try metrics.expectCounter("pushline_positions_ahead_total").totalValue == 2)
    #expect(errors.count == 1 && errors.first?.metadata["offset"] == "7" && errors.first?.metadata["topOffset"] == "2")

    clock.advance(by: .seconds(60))
    #expect(try firstUpdate("v", ahead: 1)?.isSnapshot == true)
    #expect(try metrics.expectCounter("pushline_positions_ahead_total").totalValue == 3)
    #expect(errors.count == 2 && errors.last?.metadata["positionsAhead"] == "2")
  }

  /// A position ahead gives its topic a new epoch, committed with the next batch: offsets go on
  /// from the top in it, every subscriber of the topic — one reading, one whose queue overflowed
  /// — gets a snapshot in it and then the changes that follow, a position in the old epoch at
  /// or below the top gets a snapshot instead of a catch-up, and a replayed publish is answered
  /// in it. Once per run: a position ahead in the new epoch changes nothing more.
  @Test func aPositionAheadGivesItsTopicANewEpochOnce() async throws {
    var configuration = configuration
    configuration.maxQueuedChangesPerSubscription = 4
    let broker = try await Broker(storage: InMemoryBrokerStorage(), configuration: configuration)
    let keyed = try await broker.publish("t", [card("a", 1)], key: "k")
    let old = try await broker.publish("t", [card("b", 1)])
    let (reading, stalled) = (try broker.subscribe("t"), try broker.subscribe("t"))
    var replicas = [TopicReplica(), TopicReplica()]
    func read() throws -> [[EncodedTopicUpdate]] {
      try zip([reading, stalled], replicas.indices).map { subscription, index in
        let updates = try broker.readyUpdates(for: subscription).map(readOffTheWire)
        for update in updates { replicas[index].apply(update) }
        return updates
      }
    }
    _ = try read()
    for cards in [["c", "d", "e"], ["f", "g", "h"]] {
      try await broker.publish("t", cards.map { card($0, 1) })
      _ = try broker.readyUpdates(for: reading).map(readOffTheWire).map { replicas[0].apply($0) }
    }
    #expect(try metrics.expectCounter("pushline_queue_overflows_total").totalValue == 1)

    _ = try broker.subscribe("t", epoch: old.epoch, offset: old.lastOffset + 9)
    let next = try await broker.publish("t", [card("i", 1)])
    #expect(next.epoch != old.epoch && next.firstOffset == old.lastOffset + 7)
    #expect(try metrics.expectCounter("pushline_new_epochs_total").totalValue == 1)
    for updates in try read() { #expect(updates.first?.isSnapshot == true && updates.first?.epoch == next.epoch) }
    for replica in replicas {
      #expect(replica.violations.isEmpty && replica.epoch == next.epoch && replica.position == next.lastOffset)
      #expect(replica.cards.keys.sorted() == ["a", "b", "c", "d", "e", "f", "g", "h", "i"])
    }
    let after = try await broker.publish("t", [card("j", 1)])
    for updates in try read() { #expect(updates.first?.isSnapshot == false && updates.first?.changes.map(\.cardID) == ["j"]) }
    #expect(replicas.allSatisfy { $0.violations.isEmpty && $0.position == after.lastOffset })

    let behind = try broker.subscribe("t", epoch: old.epoch, offset: old.lastOffset).takeReadyFromTheWire(maxChanges: 20, nowMillis: clock.now)
    #expect(behind?.first?.isSnapshot == true && behind?.first?.epoch == next.epoch)
    let replay = try await broker.publish("t", [card("a", 1)], key: "k")
    #expect(replay.replayed == true && replay.epoch == next.epoch && replay.firstOffset == keyed.firstOffset)

    _ = try broker.subscribe("t", epoch: next.epoch, offset: after.lastOffset + 3)
    #expect(try await broker.publish("t", [card("k", 1)]).epoch == next.epoch)
    #expect(try metrics.expectCounter("pushline_positions_ahead_total").totalValue == 2)
    #expect(try metrics.expectCounter("pushline_new_epochs_total").totalValue == 1)
  }

  /// The publishes waiting for a commit when the topic gets its new epoch are committed, and
  /// answered, in it — their retries and later replays too; the publish being committed then is
  /// in the old epoch, which its commit ends.
  @Test func publishesWaitingForTheNewEpochsCommitAreAnsweredInIt() async throws {
    let storage = CountingStorage()
    let broker = try await Broker(storage: storage, configuration: configuration)
    let old = try await broker.publish("t", [card("a", 1)])
    storage.holdCommits()
    let committing = broker.enqueuePublish("t", [card("b", 1)])
    await storage.waitUntilHeld()
    let waiting = broker.enqueuePublish("t", [card("c", 1)], key: "k")
    let retry = broker.enqueuePublish("t", [card("c", 1)], key: "k")
    _ = try broker.subscribe("t", epoch: old.epoch, offset: old.lastOffset + 5)
    storage.release()
    let (inOld, inNew, retried) = (try await committing.value, try await waiting.value, try await retry.value)
    #expect(inOld.epoch == old.epoch && inNew.epoch != old.epoch && inNew.firstOffset == inOld.lastOffset + 1)
    #expect(retried.replayed == true && retried.epoch == inNew.epoch)
    let replay = try await broker.publish("t", [card("c", 1)], key: "k")
    #expect(replay.replayed == true && replay.epoch == inNew.epoch && replay.firstOffset == inNew.firstOffset)
    let updates = try broker.readyUpdates(for: try broker.subscribe("t")).map(readOffTheWire)
    #expect(updates.first?.epoch == inNew.epoch && updates.first?.throughOffset == inNew.lastOffset)
  }

  /// A new epoch whose commit fails changes nothing the clients see until a later commit,
  /// carrying a publish, stores it: positions in the old epoch still resume meanwhile, and
  /// replays are answered in the old epoch.
  @Test func aNewEpochWhoseCommitFailedGoesWithTheNextPublish() async throws {
    let storage = CountingStorage()
    let broker = try await Broker(storage: storage, configuration: configuration)
    let old = try await broker.publish("t", [card("a", 1), card("b", 1)], key: "k")
    storage.failing.withLock { $0 = true }
    _ = try broker.subscribe("t", epoch: old.epoch, offset: old.lastOffset + 1)
    await storage.waitUntilFailed(1)
    storage.failing.withLock { $0 = false }
    let resumed = try broker.subscribe("t", epoch: old.epoch, offset: old.firstOffset).takeReadyFromTheWire(maxChanges: 10, nowMillis: clock.now)
    #expect(resumed?.first?.isSnapshot == false && resumed?.first?.epoch == old.epoch)
    #expect(try await broker.publish("t", [card("a", 1), card("b", 1)], key: "k").epoch == old.epoch)
    #expect(try metrics.expectCounter("pushline_new_epochs_total").totalValue == 0)

    let next = try await broker.publish("t", [card("c", 1)])
    #expect(next.epoch != old.epoch && next.firstOffset == old.lastOffset + 1)
    #expect(try metrics.expectCounter("pushline_new_epochs_total").totalValue == 1)
    #expect(try await broker.publish("t", [card("a", 1), card("b", 1)], key: "k").epoch == next.epoch)
    let fresh = try broker.subscribe("t").takeReadyFromTheWire(maxChanges: 10, nowMillis: clock.now)
    #expect(fresh?.first?.epoch == next.epoch && fresh?.first?.changes.count == 3)
  }

  /// A data directory put back whole (database and record of runs, as a cold backup or a
  /// volume snapshot restores it) is not noticed at start; the first subscriber that saw
  /// offsets it lost is, and gives its topic a new epoch, stored with the next commit — so
  /// the offsets given again are told apart. The remedy the line names for the other topics —
  /// a start without `broker.run` — gives every topic a new epoch.
  @Test func aDirectoryRestoredWholeIsSeenByAClientThatSawMore() async throws {
    let base = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-\(UInt64.random(in: 0...UInt64.max))").path
    let (directory, backup) = (base + "/data", base + "/backup")
    defer { try? FileManager.default.removeItem(atPath: base) }
    @discardableResult
    func run<T>(_ body: (SQLiteBrokerStorage, Broker) async throws -> T) async throws -> T {
      let storage = try SQLiteBrokerStorage(directory: directory)
      let result = try await body(storage, try await Broker(storage: storage, configuration: configuration))
      try storage.close()
      return result
    }
    try await run { _, broker in try await broker.publish("t", [card("a", 1)], key: "before") }
    try FileManager.default.copyItem(atPath: directory, toPath: backup)
    let seen = try await run { _, broker in try await broker.publish("t", [card("b", 1)]) }
    try FileManager.default.removeItem(atPath: directory)
    try FileManager.default.moveItem(atPath: backup, toPath: directory)

    let renewed = try await run { storage, broker in
      #expect(storage.epochRenewal == nil)
      let updates = try broker.readyUpdates(for: try broker.subscribe("t", epoch: seen.epoch, offset: seen.lastOffset))
      #expect(updates.first?.base.isSnapshot == true)
      return try await broker.publish("t", [card("b", 2)], key: "k")
    }
    #expect(renewed.epoch != seen.epoch && renewed.firstOffset == seen.lastOffset)
    #expect(try metrics.expectCounter("pushline_positions_ahead_total").totalValue == 1)
    #expect(errors.count == 1 && errors.first?.metadata["topic"] == "t")
    // Stored: the topic and its idempotency records come back in the new epoch.
    try await run { _, broker in
      for (key, card) in [("k", card("b", 2)), ("before", card("a", 1))] {
        let replay = try await broker.publish("t", [card], key: key)
        #expect(replay.replayed == true && replay.epoch == renewed.epoch)
      }
      let behind = try broker.subscribe("t", epoch: seen.epoch, offset: seen.firstOffset).takeReadyFromTheWire(maxChanges: 10, nowMillis: clock.now)
      #expect(behind?.first?.isSnapshot == true && behind?.first?.epoch == renewed.epoch)
    }

    try FileManager.default.removeItem(atPath: directory + "/broker.run")
    try await run { storage, broker in
      let next = try await broker.publish("t", [card("c", 1)])
      #expect(storage.epochRenewal == .runRecordMissing && next.epoch != seen.epoch)
    }
  }
}
