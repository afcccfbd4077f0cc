import NIOCore
import ServiceLifecycle

/// A ``BrokerHost`` as a `Service` of a `ServiceGroup`: it serves until the group's graceful
/// shutdown (in `serve`, SIGTERM or SIGINT), then stops the way ``BrokerHost/run(_:)`` does —
/// a GOAWAY to every client, spread over the lame-duck period and each ending its connection's
/// subscriptions, the grace period for calls in progress, then cancellation of what still runs.
/// Cancelled instead, it stops at once, without the grace period.
///
/// Cancelled before its graceful shutdown (SIGQUIT in `serve`), or during it (the group's
/// `maximumGracefulShutdownDuration` passed) while connections are still open, ``run()``
/// throws `CancellationError` once the broker has stopped: calls were cut short, and the
/// group, then `serve`, must fail rather than end as if the shutdown were graceful. Cancelled
/// with no connection open (SIGQUIT to an idle broker), or as the last one went just when the
/// deadline passed, it cut nothing short, and returns.
/// (A service that throws during the group's graceful shutdown makes the group cancel the
/// others and rethrow its error.)
struct BrokerHostService: Service {
  var brokerHost: BrokerHost
  /// Called once, with the bound address, when the broker serves.
  var onServing: @Sendable (SocketAddress) -> Void
  /// Called once when the graceful shutdown begins, before the GOAWAYs go out.
  var onStopping: @Sendable () -> Void

  func run() async throws {
    try await brokerHost.run { running in
      onServing(running.address)
      // Cancelled (SIGQUIT) rather than shut down gracefully: the server, still cancelled,
      // stops at once, and throws only when that closed connections still open.
      guard (try? await gracefulShutdown()) != nil else { return }
      onStopping()
    }
  }
}

/// ServiceLifecycle logs its services (at `debug`): the description names the broker's address
/// and leaves out the token secret its host holds.
extension BrokerHostService: CustomStringConvertible {
  var description: String { "BrokerHostService(\(brokerHost.host):\(brokerHost.port))" }
}
