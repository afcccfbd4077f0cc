import Foundation
import Logging
@testable import PushlineBroker
import MetricsTestKit
import PushlineRPC
import PushlineSchema
import PushlineTesting
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
    let top = try await broker.publish("t", [card("a", 1), card("b", 1)])
    func firstUpdate(epoch: Int64, offset: Int64) throws -> EncodedTopicUpdate? {
      try broker.subscribe("t", epoch: epoch, offset: offset).takeReadyFromTheWire(maxChanges: 10, nowMillis: clock.now)?.first
    }
    #expect(try firstUpdate(epoch: top.epoch, offset: top.lastOffset)?.isSnapshot == false)
    #expect(try firstUpdate(epoch: top.epoch + 1, offset: top.lastOffset + 5)?.isSnapshot == true)
    #expect(try metrics.expectCounter("pushline_positions_ahead_total").totalValue == 0)

    #expect(try firstUpdate(epoch: top.epoch, offset: top.lastOffset + 5)?.isSnapshot == true)
    #expect(try firstUpdate(epoch: top.epoch, offset: top.lastOffset + 9)?.isSnapshot == true)
    #expect(try metrics.expectCounter("pushline_positions_ahead_total").totalValue == 2)
    #expect(errors.count == 1 && errors.first?.metadata["offset"] == "7" && errors.first?.metadata["topOffset"] == "2")

    clock.advance(by: .seconds(60))
    #expect(try firstUpdate(epoch: top.epoch, offset: top.lastOffset + 1)?.isSnapshot == true)
    #expect(try metrics.expectCounter("pushline_positions_ahead_total").totalValue == 3)
    #expect(errors.count == 2 && errors.last?.metadata["positionsAhead"] == "2")
  }

  /// A data directory put back whole (database and record of runs, as a cold backup or a
  /// volume snapshot restores it) is not noticed at start; the first subscriber that saw
  /// offsets it lost is, and the remedy the line names — a start without `broker.run` —
  /// gives every topic a new epoch.
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
    try await run { _, broker in try await broker.publish("t", [card("a", 1)]) }
    try FileManager.default.copyItem(atPath: directory, toPath: backup)
    let seen = try await run { _, broker in try await broker.publish("t", [card("b", 1)]) }
    try FileManager.default.removeItem(atPath: directory)
    try FileManager.default.moveItem(atPath: backup, toPath: directory)

    try await run { storage, broker in
      #expect(storage.epochRenewal == nil)
      let updates = try broker.subscribe("t", epoch: seen.epoch, offset: seen.lastOffset)
        .takeReadyFromTheWire(maxChanges: 10, nowMillis: clock.now) ?? []
      #expect(updates.first?.isSnapshot == true)
    }
    #expect(try metrics.expectCounter("pushline_positions_ahead_total").totalValue == 1)
    #expect(errors.count == 1 && errors.first?.metadata["topic"] == "t")

    try FileManager.default.removeItem(atPath: directory + "/broker.run")
    try await run { storage, broker in
      let next = try await broker.publish("t", [card("c", 1)])
      #expect(storage.epochRenewal == .runRecordMissing && next.epoch != seen.epoch)
    }
  }
}
