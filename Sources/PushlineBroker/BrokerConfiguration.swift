import Foundation
public import PushlineRPC
public import Logging

/// How a broker behaves: the bounds that keep it safe and the clock it reads. A duration
/// beyond `Int64` milliseconds (some 292 million years) counts as forever.
public struct BrokerConfiguration: Sendable {
  /// Tombstones kept per topic; past this the oldest go and the floor rises.
  public var maxTombstonesPerTopic: Int
  /// Tombstones older than this go (checked when their topic is published to, and once a minute).
  public var maxTombstoneAge: Duration
  /// How long a publish's idempotency key is remembered.
  public var idempotencyWindow: Duration
  /// How many idempotency keys are remembered at most (about 200 bytes each with a UUID for
  /// key, up to 900 with the longest keys and topic names): past that, the oldest are
  /// forgotten before their window ends, so that publishers minting a key per publish at a
  /// high rate cannot run the broker out of memory (a retry of a forgotten one is applied again).
  public var maxPublishRecords: Int
  /// A subscribed topic of which nothing was sent for this long gets a freshness watermark.
  public var watermarkInterval: Duration
  /// Changes queued for one subscriber, beyond which a topic's queue is replaced by a
  /// snapshot sent when the subscriber catches up.
  public var maxQueuedChangesPerSubscription: Int
  /// Changes a live update or a resume's catch-up carries at most in one message; at least 1
  /// (a smaller value is taken as 1: with none, a subscription would never move on). A
  /// snapshot's parts are bounded by bytes alone (docs/PROTOCOL.md 3.3).
  @AtLeastOne public var maxChangesPerUpdate: Int
  /// Changes one publish may carry; at least 1 (a smaller value is taken as 1).
  @AtLeastOne public var maxChangesPerPublish: Int
  /// The default of ``maxChangesPerPublish``, the limit docs/PROTOCOL.md 3.2 states: what a
  /// publisher splits a larger set of changes by.
  public static let defaultMaxChangesPerPublish = 10_000
  /// Topics one subscription may follow; at least 1 (a smaller value is taken as 1).
  @AtLeastOne public var maxTopicsPerSubscription: Int
  /// Subscriptions one token subject may hold at once (each holds a queue of up to
  /// ``maxQueuedChangesPerSubscription`` changes); past that, RESOURCE_EXHAUSTED. 0 allows any
  /// number, for deployments that share one subject among many readers.
  public var maxSubscriptionsPerSubject: Int
  /// On shutdown, subscriptions end with UNAVAILABLE and a retry-after hint spread at random
  /// over this period, so that clients do not all come back in the same instant. (A broker
  /// served by `pushline serve` gives its connections' GOAWAYs hints from the same spread.)
  public var reconnectSpread: Duration
  /// The memory the publishes waiting for storage may hold together (their cards, IDs, topics
  /// and keys, and what keeping them costs: `PendingPublish.byteCount(of:)`); past that, a
  /// publish is refused with RESOURCE_EXHAUSTED and a retry-after hint, so that a storage
  /// slower than its publishers cannot run the broker out of memory. A publish finding none in
  /// flight is taken whatever its size.
  public var maxInFlightPublishBytes: Int
  /// New subscriptions admitted per second on average (bursts up to as many at once); past
  /// that, UNAVAILABLE with a retry-after hint. 0 admits everything.
  public var maxSubscribesPerSecond: Int
  /// The wall clock, in Unix milliseconds: offsets' change times, expiry, watermarks, tokens.
  /// Tests inject their own.
  public var nowMillis: @Sendable () -> Int64
  /// Where the broker reports its figures.
  public var metrics: BrokerMetrics
  /// Where the broker logs what operators should know (failed commits, expired streams).
  public var logger: Logger

  /// The defaults: 1,000 tombstones or 7 days, a 10-minute idempotency window for up to
  /// 1,000,000 keys, a watermark
  /// after 30 s of silence, 100,000 queued changes per subscriber, 100 subscriptions per
  /// subject, reconnects spread over 5 s, 5,000 new subscriptions a second, 64 MiB of
  /// publishes waiting for storage.
  public init(
    maxTombstonesPerTopic: Int = 1000, maxTombstoneAge: Duration = .seconds(7 * 86400),
    idempotencyWindow: Duration = .seconds(600), maxPublishRecords: Int = 1_000_000, watermarkInterval: Duration = .seconds(30),
    maxQueuedChangesPerSubscription: Int = 100_000, maxChangesPerUpdate: Int = 512,
    maxChangesPerPublish: Int = defaultMaxChangesPerPublish,
    maxTopicsPerSubscription: Int = 1000, maxSubscriptionsPerSubject: Int = 100, reconnectSpread: Duration = .seconds(5),
    maxSubscribesPerSecond: Int = 5000, maxInFlightPublishBytes: Int = 64 << 20,
    nowMillis: @escaping @Sendable () -> Int64 = WallClock.systemMillis,
    metrics: BrokerMetrics = BrokerMetrics(), logger: Logger = Logger(label: "pushline.broker")
  ) {
    self.maxTombstonesPerTopic = maxTombstonesPerTopic
    self.maxTombstoneAge = maxTombstoneAge
    self.idempotencyWindow = idempotencyWindow
    self.maxPublishRecords = maxPublishRecords
    self.watermarkInterval = watermarkInterval
    self.maxQueuedChangesPerSubscription = maxQueuedChangesPerSubscription
    self.maxChangesPerUpdate = maxChangesPerUpdate
    self.maxChangesPerPublish = maxChangesPerPublish
    self.maxTopicsPerSubscription = maxTopicsPerSubscription
    self.maxSubscriptionsPerSubject = maxSubscriptionsPerSubject
    self.reconnectSpread = reconnectSpread
    self.maxSubscribesPerSecond = maxSubscribesPerSecond
    self.maxInFlightPublishBytes = maxInFlightPublishBytes
    self.nowMillis = nowMillis
    self.metrics = metrics
    self.logger = logger
  }

  /// ``idempotencyWindow`` in milliseconds, from 0 (a negative window counts as none) to
  /// `Int64.max`, so that a clock reading (never negative) minus it stays in range.
  var idempotencyWindowMillis: Int64 { max(idempotencyWindow.milliseconds, 0) }
}
