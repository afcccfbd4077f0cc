import Synchronization

/// One subscriber connection's progress, written on its event loop and read by the scenario
/// that waits for completion: changes received, its position (Pushline: the last
/// `throughOffset`; nats-server: the message count), when the last delivery arrived,
/// optionally each delivery's publish→deliver latency, the position to resume from (Pushline)
/// and the status that ended its subscription, if one did.
final class SubscriberProgress: Sendable {
  /// The topic's index (`driver/i`), or 0 for the broadcast topic.
  let topic: Int
  let received = Atomic<Int>(0)
  let position = Atomic<Int64>(0)
  let lastDeliveryNanos = Atomic<Int64>(0)
  let failure = Mutex<String?>(nil)
  let recordsLatency: Bool
  let latencies = Mutex<[Int64]>([])
  /// The epoch and `throughOffset` of the last complete update (0 before one): where a new
  /// subscription resumes (written on the loop, read once the connection is closed).
  let resumeEpoch = Atomic<Int64>(0)
  let resumeOffset = Atomic<Int64>(0)
  /// The status code that ended the subscription, or -1 while none has.
  let endStatusCode = Atomic<Int>(-1)

  init(topic: Int, recordsLatency: Bool) {
    self.topic = topic
    self.recordsLatency = recordsLatency
  }

  /// Counts `changes` delivered at `now`, the position after them, and their latencies. An
  /// update without changes (a watermark) moves the position but is not a delivery.
  /// The position is stored last (releasing), so a reader that sees it complete (acquiring)
  /// also sees the counts and latencies that led there.
  func delivered(_ changes: Int, position: Int64, now: Int64, stamps: [Int64]) {
    if changes > 0 {
      received.add(changes, ordering: .relaxed)
      lastDeliveryNanos.store(now, ordering: .relaxed)
      if recordsLatency, !stamps.isEmpty {
        latencies.withLock { list in for stamp in stamps { list.append(now - stamp) } }
      }
    }
    self.position.store(position, ordering: .releasing)
  }

  func fail(_ reason: String) {
    failure.withLock { if $0 == nil { $0 = reason } }
  }
}

/// How the publisher runs: how many publishes to which topics, how many at once, at what rate.
struct PublishPlan: Sendable {
  /// Topic names (Pushline: `driver/7`; nats-server: `driver.7`), published to round-robin.
  var topics: [String]
  /// Publish calls (Pushline `PublishRequest`s, nats-server `PUB`s).
  var publishes: Int
  /// Card changes per Pushline `PublishRequest` (distinct cards of one topic); 1 for nats-server.
  var changesPerPublish = 1
  /// Distinct card IDs per topic, updated in turn.
  var cardsPerTopic = 8
  /// Pushline publishes in flight on the connection at most.
  var window = 8_192
  /// Pushline publishes on one `PublishStream` call (the default) rather than a `Publish`
  /// call each.
  var streams = true
  /// Publishes per second, or `nil` for as fast as the broker takes them.
  var rate: Double?

  /// The topic index and first card number of publish `k`.
  func target(of k: Int) -> (topic: Int, card: Int) {
    (k % topics.count, (k / topics.count * changesPerPublish) % cardsPerTopic)
  }

  /// How many publishes go to topic `index`.
  func publishes(toTopic index: Int) -> Int {
    publishes / topics.count + (index < publishes % topics.count ? 1 : 0)
  }

  /// The publish time publish `k` is stamped with: its scheduled time when rate-limited (so
  /// a publisher that falls behind shows up as latency), otherwise `now`.
  func stamp(of k: Int, start: Int64, now: Int64) -> Int64 {
    guard let rate else { return now }
    return start + Int64(Double(k) * 1e9 / rate)
  }

  /// How many publishes may have been sent by `now`.
  func allowed(start: Int64, now: Int64) -> Int {
    guard let rate else { return publishes }
    return min(publishes, Int(Double(now - start) * rate / 1e9) + 1)
  }
}

/// What the publisher reports: when it started, when the last publish was acknowledged
/// (nats-server: when the PONG after the last PUB arrived), and per topic the last offset
/// the broker assigned (Pushline only).
struct PublishResult: Sendable {
  var startNanos: Int64
  var endNanos: Int64
  var finalOffsets: [Int64]
}
