import CoreMetrics
import NIOCore
import PushlineRPC
import Synchronization

/// The connections a server is serving, so that a graceful shutdown reaches each of them and
/// the server knows when the last has closed, and their count as metrics:
/// `pushline_connections` (open now, refused ones too until they close) and
/// `pushline_connections_accepted_total` (refused ones not included).
///
/// A connection that registers after the shutdown has begun is told at once. Each connection's
/// GOAWAY carries a retry-after hint of its own, drawn from the reconnect spread.
final class ConnectionRegistry: Sendable {
  private struct State {
    /// Set once the shutdown has begun: the spread of its GOAWAYs' retry-after hints.
    var reconnectSpread: Duration?
    /// Set once every connection has been closed at once: one registered later (accepted
    /// just before the listener closed) is closed as it arrives.
    var isClosingAll = false
    var connections: [ObjectIdentifier: any Channel] = [:]
    /// The server, waiting for the last connection to close.
    var emptyWaiter: CheckedContinuation<Void, Never>?
  }

  private let state = Mutex(State())
  /// Recorded while `state` is locked: counts recorded after it is released could arrive out of
  /// order (a register's and a remove's crossing), leaving the gauge at a stale count.
  private let open: Gauge
  private let accepted: Counter

  /// A registry reporting through `metrics`.
  init(metrics: any MetricsFactory) {
    open = Gauge(label: "pushline_connections", factory: metrics)
    accepted = Counter(label: "pushline_connections_accepted_total", factory: metrics)
  }

  /// Registers `channel` until it closes; a connection refused past the accept rate is not
  /// counted as accepted.
  func register(_ channel: any Channel, isRefused: Bool) {
    let (reconnectSpread, isClosingAll) = state.withLock { state in
      state.connections[ObjectIdentifier(channel)] = channel
      open.record(state.connections.count)
      return (state.reconnectSpread, state.isClosingAll)
    }
    if !isRefused { accepted.increment() }
    channel.closeFuture.whenComplete { _ in self.remove(channel) }
    if isClosingAll { return channel.close(promise: nil) }
    if let reconnectSpread { Self.shutDown(channel, reconnectSpread: reconnectSpread) }
  }

  private func remove(_ channel: any Channel) {
    let waiter = state.withLock { state in
      state.connections.removeValue(forKey: ObjectIdentifier(channel))
      open.record(state.connections.count)
      return state.connections.isEmpty ? state.emptyWaiter.take() : nil
    }
    waiter?.resume()
  }

  /// Begins the graceful shutdown of every connection, present and future: the present ones in
  /// random order, spread evenly over `period` (the lame-duck period), so that their clients do
  /// not all learn of it in the same instant; and each GOAWAY with a retry-after hint drawn
  /// from `reconnectSpread`, so that they do not all come back — here after a restart — in the
  /// same instant either.
  func shutDown(spreadOver period: Duration, reconnectSpread: Duration) {
    let connections = state.withLock { state in
      state.reconnectSpread = reconnectSpread
      return Array(state.connections.values)
    }.shuffled()
    let step = TimeAmount(period).nanoseconds / Int64(max(connections.count, 1))
    for (index, channel) in connections.enumerated() {
      guard index > 0, step > 0 else {
        Self.shutDown(channel, reconnectSpread: reconnectSpread)
        continue
      }
      channel.eventLoop.scheduleTask(in: .nanoseconds(step * Int64(index))) {
        Self.shutDown(channel, reconnectSpread: reconnectSpread)
      }
    }
  }

  /// Closes every connection at once (the server was cancelled), and any registered later,
  /// telling `noting` first how many were open: before the closes, which may empty the
  /// registry and wake its waiter.
  func closeAll(noting: (Int) -> Void = { _ in }) {
    let open = state.withLock { state in
      state.isClosingAll = true
      return Array(state.connections.values)
    }
    noting(open.count)
    for channel in open { channel.close(promise: nil) }
  }

  /// Returns once no connection is open.
  func waitUntilEmpty() async {
    await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
      let isEmpty = state.withLock { state in
        guard !state.connections.isEmpty else { return true }
        state.emptyWaiter = waiter
        return false
      }
      if isEmpty { waiter.resume() }
    }
  }

  /// Tells `channel`'s connection to go away, with a hint drawn from `reconnectSpread`.
  private static func shutDown(_ channel: any Channel, reconnectSpread: Duration) {
    let event = ServerConnectionHandler.ShutDown(retryAfterMillis: reconnectSpread.randomRetryAfterMillis())
    channel.pipeline.fireUserInboundEventTriggered(event)
  }
}
