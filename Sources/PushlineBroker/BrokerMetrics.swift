public import CoreMetrics

/// What the broker reports through swift-metrics: publishes, deliveries, coalescing, queue
/// depth, subscriptions, commit latency. `pushline serve` exposes them as Prometheus text.
public struct BrokerMetrics: Sendable {
  let publishes: Counter
  let publishedChanges: Counter
  let failedCommits: Counter
  let deliveredChanges: Counter
  let coalescedChanges: Counter
  let subscriptions: Gauge
  let queuedChanges: Gauge
  /// The longest subscriber queue: one slow reader, which the total hides among many.
  let longestQueue: Gauge
  let commitDuration: Timer
  let commitSize: Recorder
  /// Publishes refused (a rule broken, a key reused, too many waiting for storage).
  let refusedPublishes: Counter
  /// Topics whose queue for a subscriber passed its bound: their queued changes dropped, a
  /// snapshot to follow. Counted as it happens, so a subscriber that stopped reading shows.
  let queueOverflows: Counter
  /// Subscribes from a position ahead of its topic's top in the topic's epoch: offsets the
  /// broker acknowledged and no longer has (``HistoryLossReport``).
  let positionsAhead: Counter
  /// Topics given a new epoch while the broker runs, because of such a position
  /// (``Broker/startNewEpoch(of:)``).
  let newEpochs: Counter

  /// The label of the commits' duration, a timer of the storage's write alone.
  public static let commitDurationLabel = "pushline_commit_duration_seconds"
  /// Buckets for it: an SQLite commit on a fast disk takes about a millisecond.
  public static let commitDurationBuckets: [Duration] = [
    .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .microseconds(2500), .milliseconds(5),
    .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
    .seconds(1), .milliseconds(2500),
  ]
  /// The label of the publishes per commit (group commit's batch sizes).
  public static let commitSizeLabel = "pushline_commit_publishes"
  /// Buckets for it: from one publish to a window's worth.
  public static let commitSizeBuckets: [Double] = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000]

  /// Metrics made by `factory` (the global one by default).
  public init(factory: any MetricsFactory = MetricsSystem.factory) {
    publishes = Counter(label: "pushline_publishes_total", factory: factory)
    publishedChanges = Counter(label: "pushline_published_changes_total", factory: factory)
    failedCommits = Counter(label: "pushline_failed_commits_total", factory: factory)
    deliveredChanges = Counter(label: "pushline_delivered_changes_total", factory: factory)
    coalescedChanges = Counter(label: "pushline_coalesced_changes_total", factory: factory)
    subscriptions = Gauge(label: "pushline_subscriptions", factory: factory)
    queuedChanges = Gauge(label: "pushline_queued_changes", factory: factory)
    longestQueue = Gauge(label: "pushline_longest_queue_changes", factory: factory)
    commitDuration = Timer(label: Self.commitDurationLabel, factory: factory)
    commitSize = Recorder(label: Self.commitSizeLabel, factory: factory)
    refusedPublishes = Counter(label: "pushline_refused_publishes_total", factory: factory)
    queueOverflows = Counter(label: "pushline_queue_overflows_total", factory: factory)
    positionsAhead = Counter(label: "pushline_positions_ahead_total", factory: factory)
    newEpochs = Counter(label: "pushline_new_epochs_total", factory: factory)
  }
}
