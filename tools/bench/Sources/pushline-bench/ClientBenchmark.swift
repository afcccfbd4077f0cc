import ArgumentParser
import Foundation
import PushlineClient
import PushlineSchema

/// `pushline-bench client`: how fast the client core applies updates into its cache and mode
/// streams, and how long a cold start with 1,000 cached cards takes. No peer: the targets
/// are absolute (≥ 200,000 updates/s, cold start < 50 ms).
struct ClientBenchmark: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "client", abstract: "Client core: updates applied per second, cold start with 1,000 cached cards.")

  @Option(help: "Updates per apply-rate run.")
  var updates = 200_000

  @Option(help: "Runs per figure (the median is printed).")
  var runs = 5

  func run() async throws {
    AllocationCounter.execWithoutInterposer()
    print("client core (release), median of \(runs) runs")
    print("scenario                                             updates/s")
    for (label, cardsPerTopic, changesPerMessage, persisted) in [
      ("1 change per message, 2 topics x 20 cards, memory", 20, 1, false),
      ("1 change per message, 2 topics x 20 cards, SQLite", 20, 1, true),
      ("32 changes per message, 2 topics x 500 cards, memory", 500, 32, false),
    ] {
      let rates = try (0..<runs).map { _ in try applyRate(cardsPerTopic: cardsPerTopic, changesPerMessage: changesPerMessage, persisted: persisted) }
      print("\(label.padding(toLength: 52, withPad: " ", startingAt: 0)) \(Int(rates.sorted()[runs / 2]))")
    }
    let starts = try (0..<max(runs, 9)).map { _ in try coldStart(cards: 1000) }
    print("cold start, 1,000 cached cards (open SQLite cache, publish modes): \(String(format: "%.1f", starts.sorted()[starts.count / 2])) ms median")
  }

  static func card(_ id: String, version: Int) -> TrackerCard {
    var card = TrackerCard(cardID: id, priority: Double(version % 50), isValid: true)
    card.cardType = .browse
    card.lastUpdatedAt = 1_800_000_000
    card.expiresAt = 4_000_000_000
    var day = TrackerDailyEarningsCard(title: "Today")
    day.formattedTotal = "$\(version % 300).00"
    day.tripCount = UInt32(version % 40)
    card.payload = TrackerCardPayload()
    card.payload?.trackerDailyEarningsCard = day
    return card
  }

  /// Updates per second through `TrackerDataManager.apply`, which updates the cache and
  /// publishes the modes once per message.
  func applyRate(cardsPerTopic: Int, changesPerMessage: Int, persisted: Bool) throws -> Double {
    let topics = ["driver/1/earnings", "driver/1/incentives"]
    let path = NSTemporaryDirectory() + "pushline-bench-\(UInt32.random(in: 0...UInt32.max)).sqlite"
    defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
    let cache = try CardCache(persistence: persisted ? SQLiteCachePersistence(path: path) : nil)
    let tracker = TrackerDataManager(cache: cache, topics: topics)
    var messages: [TopicUpdate] = []
    var offsets = [Int64](repeating: 0, count: topics.count)
    for index in 0..<(updates / changesPerMessage) {
      let topicIndex = index % topics.count
      var message = TopicUpdate(topic: topics[topicIndex], epoch: 1, throughOffset: 0)
      if offsets[topicIndex] == 0 { message.snapshot = true }
      for change in 0..<changesPerMessage {
        offsets[topicIndex] += 1
        let version = index * changesPerMessage + change
        let cardID = "c\(Int(offsets[topicIndex]) % cardsPerTopic)"  // each topic cycles through its cards
        message.changes.append(CardChange(upserting: Self.card(cardID, version: version), offset: offsets[topicIndex]))
      }
      message.throughOffset = offsets[topicIndex]
      messages.append(message)
    }
    let modes = tracker.modeUpdates()  // a consumer is subscribed, as in the app
    let clock = ContinuousClock()
    let elapsed = try clock.measure {
      for (index, message) in messages.enumerated() {
        tracker.apply([message])
        if persisted, index % 1000 == 999 { try cache.flush() }
      }
      try cache.flush()
    }
    _ = modes
    precondition(tracker.modes.browse.count == topics.count * cardsPerTopic, "the modes do not show every card")
    return Double(messages.count * changesPerMessage) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
  }

  /// Milliseconds from opening a cache of `cards` cards to the modes being published.
  func coldStart(cards: Int) throws -> Double {
    let topics = ["driver/1/earnings", "driver/1/incentives"]
    let path = NSTemporaryDirectory() + "pushline-bench-cold-\(UInt32.random(in: 0...UInt32.max)).sqlite"
    defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
    do {
      let cache = try CardCache(persistence: SQLiteCachePersistence(path: path))
      for (index, topic) in topics.enumerated() {
        var snapshot = TopicUpdate(topic: topic, epoch: 1, throughOffset: Int64(cards / 2))
        snapshot.snapshot = true
        snapshot.changes = (0..<cards / 2).map { CardChange(upserting: Self.card("c\(index)-\($0)", version: $0), offset: Int64($0 + 1)) }
        cache.apply(snapshot, receivedAtMillis: 0)
      }
      try cache.flush()
    }
    let clock = ContinuousClock()
    let elapsed = try clock.measure {
      let tracker = TrackerDataManager(cache: try CardCache(persistence: SQLiteCachePersistence(path: path)), topics: topics)
      precondition(tracker.modes.browse.count == cards)
    }
    return Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
  }
}
