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
    commitDuration = Timer(label: "pushline_commit_duration_seconds", factory: factory)
    commitSize = Recorder(label: "pushline_commit_publishes", factory: factory)
  }
}
