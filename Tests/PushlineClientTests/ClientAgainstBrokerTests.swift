import Foundation
import NIOCore
import PushlineBroker
@testable import PushlineCLI
import PushlineClient
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import Synchronization
import Testing

/// The client core against a real broker over loopback: cut connections, a restarted
/// client, a restarted broker — the client ends with exactly the publishers' state, resuming
/// without a snapshot.
@Suite("Client against a real broker")
struct ClientAgainstBrokerTests {
  static let secret = Array("0123456789abcdef0123456789abcdef".utf8)
  static let topics = ["driver/1/earnings", "driver/1/incentives"]
  let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-client-\(UInt32.random(in: 0...UInt32.max))").path

  /// Where the broker listens now (it moves when restarted), and what was asked of it.
  final class Broker: TrackerConnector {
    /// The running broker's port with a token it accepts, set as one value: a client that
    /// read a new port with an old or missing token would be refused for good.
    /// Port 0 (nothing listening yet) fails the way a down broker does, and is retried.
    let endpoint = Mutex((port: 0, token: ""))
    let snapshots = Mutex(0)
    let pulls = Mutex(0)

    func withSession(_ body: (any TrackerSession) async throws -> Void) async throws {
      let (port, token) = endpoint.withLock { $0 }
      let connector = RPCTrackerConnector(host: "127.0.0.1", port: port, token: token)
      try await connector.withSession { session in try await body(Spy(inner: session, broker: self)) }
    }

    struct Spy: TrackerSession {
      var inner: any TrackerSession
      var broker: Broker
      func cards(in topic: String) async throws -> TopicUpdate {
        broker.pulls.withLock { $0 += 1 }
        return try await inner.cards(in: topic)
      }
      func updates(from positions: [TopicPosition]) -> AsyncThrowingStream<TopicUpdate, any Error> {
        let broker = self.broker
        return .relaying(inner.updates(from: positions)) { update in
          if update.isSnapshot { broker.snapshots.withLock { $0 += 1 } }
        }
      }
    }
  }

  /// Runs a broker on the shared data directory while `body` runs.
  func withBroker(_ broker: Broker, _ body: (RPCConnection) async throws -> Void) async throws {
    let host = BrokerHost(
      storage: try SQLiteBrokerStorage(directory: directory + "/broker"),
      configuration: BrokerConfiguration(reconnectSpread: .milliseconds(100)),
      secret: Self.secret, host: "127.0.0.1", port: 0)
    try await host.run { running in
      let expiry = WallClock.systemMillis() + 3_600_000
      let reader = try await running.authority.mint(subject: "driver-1", role: .subscriber, topics: ["driver/1/*"], expiresAtMillis: expiry)
      broker.endpoint.withLock { $0 = (running.address.port!, reader) }
      var configuration = ClientConnectionStateMachine.Configuration()
      configuration.authToken = try await running.authority.mint(subject: "svc", role: .publisher, topics: ["driver/*"], expiresAtMillis: expiry)
      try await RPCClient.withConnection(host: "127.0.0.1", port: running.address.port!, configuration: configuration, body)
    }
  }

  /// Publishes `count` random batches, recording the truth.
  static func publish(_ count: Int, on publisher: RPCConnection, into truth: inout [String: [String: TrackerCard]], version: inout Int) async throws {
    for _ in 0..<count {
      version += 1
      let topic = topics[version % 2]
      let id = "c\(version % 7)"
      if version % 5 == 0 {
        _ = try await publisher.unary(
          BrokerService.publishMethod, request: PublishRequest(topic: topic, changes: [CardChange(removing: id)]), response: PublishResponse.self)
        truth[topic, default: [:]][id] = nil
      } else {
        let next = card(id, priority: Double(version))
        _ = try await publisher.unary(
          BrokerService.publishMethod, request: PublishRequest(topic: topic, changes: [CardChange(upserting: next)]),
          response: PublishResponse.self)
        truth[topic, default: [:]][id] = next
      }
    }
  }

  /// Waits (20 s at most) until the tracker's cache holds exactly `truth`.
  static func converge(_ tracker: TrackerDataManager, to truth: [String: [String: TrackerCard]]) async throws {
    @Sendable func matches() -> Bool {
      topics.allSatisfy { (tracker.cache.topic($0)?.cards.mapValues(\.card) ?? [:]) == (truth[$0] ?? [:]) }
    }
    try await withThrowingTaskGroup(of: Bool.self) { group in
      group.addTask {
        for await _ in tracker.modeUpdates() where matches() { return true }
        return false
      }
      group.addTask {
        try await Task.sleep(for: .seconds(20))
        return false
      }
      let converged = try await group.next() ?? false
      group.cancelAll()
      #expect(
        converged,
        "the client did not converge: \(topics.map { tracker.cache.topic($0)?.cards.keys.sorted() ?? [] }) vs \(truth.mapValues { $0.keys.sorted() }), connection \(tracker.modes.connection)"
      )
    }
  }

  func client(_ broker: Broker, cut: Bool, cache name: String = "client") throws -> (TrackerDataManager, ConnectionManager) {
    let cache = try CardCache(persistence: SQLiteCachePersistence(path: directory + "/\(name).sqlite"))
    let tracker = TrackerDataManager(cache: cache, topics: Self.topics, configuration: .init(staleAfterOffline: .zero))
    let connector: any TrackerConnector = cut ? DemoNetworkCuts(inner: broker, liveFor: .milliseconds(150), downFor: .milliseconds(50)) : broker
    let manager = ConnectionManager(
      connector: connector, services: Self.topics.map { ServiceDataManager(name: $0, topic: $0) }, tracker: tracker,
      backoff: Backoff(initial: .milliseconds(20), maximum: .milliseconds(100)))
    return (tracker, manager)
  }

  @Test func cutConnectionsAndABrokerRestartConvergeWithoutSnapshots() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let broker = Broker()
    var truth: [String: [String: TrackerCard]] = [:]
    var version = 0
    let (tracker, manager) = try client(broker, cut: true)
    let running = Task { await manager.run() }
    try await withBroker(broker) { publisher in
      try await Self.publish(300, on: publisher, into: &truth, version: &version)
      try await Self.converge(tracker, to: truth)
    }
    try await withBroker(broker) { publisher in  // the same data directory, another port
      try await Self.publish(100, on: publisher, into: &truth, version: &version)
      try await Self.converge(tracker, to: truth)
    }
    running.cancel()
    await running.value
    #expect(broker.pulls.withLock { $0 } <= 2)  // the first load of each topic, at most
    #expect(broker.snapshots.withLock { $0 } == 0)
  }

  @Test func aClientRestartedWhileTheBrokerIsDownShowsItsCardsThenResumes() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let broker = Broker()
    var truth: [String: [String: TrackerCard]] = [:]
    var version = 0
    try await withBroker(broker) { publisher in
      try await Self.publish(40, on: publisher, into: &truth, version: &version)
      let (tracker, manager) = try client(broker, cut: false)
      let running = Task { await manager.run() }
      try await Self.converge(tracker, to: truth)
      running.cancel()
      await running.value  // flushes the cache
    }
    // The broker is down: a new client process shows the cached cards at once.
    let pullsBefore = broker.pulls.withLock { $0 }
    let (tracker, manager) = try client(broker, cut: false)
    let cached = Set(tracker.modes.browse.map(\.cardID) + [])
    #expect(cached == Set(truth.values.flatMap(\.keys)))
    #expect(tracker.modes.browse.allSatisfy { $0.lastUpdatedAt == $0.card.lastUpdatedAt })
    let running = Task { await manager.run() }
    try await withBroker(broker) { publisher in
      try await Self.publish(40, on: publisher, into: &truth, version: &version)
      try await Self.converge(tracker, to: truth)
    }
    running.cancel()
    await running.value
    #expect(broker.pulls.withLock { $0 } == pullsBefore)
    #expect(broker.snapshots.withLock { $0 } == 0)
  }

  /// A data directory put back whole (a cold backup, broker.run included) loses the publishes
  /// made after it, and the offsets they took are given again to other changes. The first
  /// client back, ahead of the restored topics, gets snapshots and gives the topics new epochs;
  /// a client back only once new publishes have passed its position then gets snapshots too,
  /// not a resume that would skip the changes given its offsets. Both end with exactly the
  /// restored broker's state and what was published since.
  @Test func aDirectoryPutBackWholeBringsEveryClientToTheBrokersState() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let broker = Broker()
    var truth: [String: [String: TrackerCard]] = [:]
    var version = 0
    try await withBroker(broker) { publisher in try await Self.publish(40, on: publisher, into: &truth, version: &version) }
    let (kept, backup) = (truth, directory + "/backup")
    try FileManager.default.copyItem(atPath: directory + "/broker", toPath: backup)
    try await withBroker(broker) { publisher in
      try await Self.publish(40, on: publisher, into: &truth, version: &version)
      for name in ["first", "second"] {
        let (tracker, manager) = try client(broker, cut: false, cache: name)
        let running = Task { await manager.run() }
        try await Self.converge(tracker, to: truth)
        running.cancel()
        await running.value  // flushes the cache: each topic at offset 40
      }
    }
    try FileManager.default.removeItem(atPath: directory + "/broker")
    try FileManager.default.moveItem(atPath: backup, toPath: directory + "/broker")
    truth = kept  // each topic at offset 20 again

    try await withBroker(broker) { publisher in
      let (first, firstManager) = try client(broker, cut: false, cache: "first")
      let firstRunning = Task { await firstManager.run() }
      try await Self.converge(first, to: truth)
      // Just past the second client's positions: offsets 21 to 41 of each topic, given again
      // (a resume from 40 would bring 41 alone).
      try await Self.publish(42, on: publisher, into: &truth, version: &version)
      try await Self.converge(first, to: truth)
      let (second, secondManager) = try client(broker, cut: false, cache: "second")
      let secondRunning = Task { await secondManager.run() }
      try await Self.converge(second, to: truth)
      for running in [firstRunning, secondRunning] {
        running.cancel()
        await running.value
      }
    }
  }
}
