import CoreMetrics
import NIOCore
import Synchronization

/// The connections a server is serving, so that a graceful shutdown reaches each of them, and
/// their count as metrics: `pushline_connections` (open now) and
/// `pushline_connections_accepted_total`.
///
/// A connection that registers after the shutdown has begun is told at once.
final class ConnectionRegistry: Sendable {
  private struct State {
    var isShuttingDown = false
    var connections: [ObjectIdentifier: any Channel] = [:]
  }

  private let state = Mutex(State())
  private let open: Gauge
  private let accepted: Counter

  /// A registry reporting through `metrics`.
  init(metrics: any MetricsFactory) {
    open = Gauge(label: "pushline_connections", factory: metrics)
    accepted = Counter(label: "pushline_connections_accepted_total", factory: metrics)
  }

  /// Registers `channel` until ``remove(_:)``.
  func register(_ channel: any Channel) {
    let (isShuttingDown, count) = state.withLock { state in
      state.connections[ObjectIdentifier(channel)] = channel
      return (state.isShuttingDown, state.connections.count)
    }
    accepted.increment()
    open.record(count)
    if isShuttingDown { Self.shutDown(channel) }
  }

  /// Forgets a connection that has closed.
  func remove(_ channel: any Channel) {
    let count = state.withLock { state in
      state.connections.removeValue(forKey: ObjectIdentifier(channel))
      return state.connections.count
    }
    open.record(count)
  }

  /// Begins the graceful shutdown of every connection, present and future.
  func shutDown() {
    let connections = state.withLock { state in
      state.isShuttingDown = true
      return Array(state.connections.values)
    }
    for channel in connections { Self.shutDown(channel) }
  }

  private static func shutDown(_ channel: any Channel) {
    channel.pipeline.fireUserInboundEventTriggered(ServerConnectionHandler.ShutDown())
  }
}
