import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

/// A Pushline broker's own figures, read from its `GET /metrics` (Prometheus text, as
/// `pushline serve --metrics-port` serves them): the churn scenario waits on its gauges —
/// subscriptions and connections back to what the publisher alone holds — before it reads the
/// broker's memory, instead of sleeping for a guess.
struct BrokerMetricsProbe {
  /// The broker's metrics port, on the loopback interface.
  var port: Int

  /// The value of each unlabelled sample, by metric name.
  ///
  /// - Throws: what the request failed with.
  func read() async throws -> [String: Double] {
    let url = URL(string: "http://127.0.0.1:\(port)/metrics")!
    let data: Data = try await withCheckedThrowingContinuation { done in
      URLSession.shared.dataTask(with: url) { data, _, error in
        if let data { return done.resume(returning: data) }
        done.resume(throwing: error ?? LoadError("GET \(url): no answer"))
      }.resume()
    }
    var samples: [String: Double] = [:]
    for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
      let parts = line.split(separator: " ")
      if parts.count == 2, let value = Double(parts[1]) { samples[String(parts[0])] = value }
    }
    return samples
  }

  /// Waits until the broker holds no subscription and no connection beyond `connections`, as
  /// its gauges say, polling every 20 ms for at most `timeout` seconds. Returns the seconds it
  /// waited and the subscriptions and connections still open when it stopped waiting (zero
  /// and `connections` once settled).
  func settle(connections: Int, timeout: Double) async throws -> (seconds: Double, subscriptions: Int, connections: Int) {
    let start = ProcessStats.monotonicNanos()
    while true {
      let samples = try await read()
      let held = (Int(samples["pushline_subscriptions"] ?? -1), Int(samples["pushline_connections"] ?? -1))
      let seconds = Double(ProcessStats.monotonicNanos() - start) / 1e9
      if (held.0 == 0 && held.1 == connections) || seconds >= timeout { return (seconds, held.0, held.1) }
      try await Task.sleep(for: .milliseconds(20))
    }
  }
}
