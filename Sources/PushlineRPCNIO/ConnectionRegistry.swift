import NIOCore
import Synchronization

/// The connections a server is serving, so that a graceful shutdown reaches each of them.
///
/// A connection that registers after the shutdown has begun is told at once.
final class ConnectionRegistry: Sendable {
  private struct State {
    var isShuttingDown = false
    var connections: [ObjectIdentifier: any Channel] = [:]
  }

  private let state = Mutex(State())

  /// Registers `channel` until ``remove(_:)``.
  func register(_ channel: any Channel) {
    let isShuttingDown = state.withLock { state in
      state.connections[ObjectIdentifier(channel)] = channel
      return state.isShuttingDown
    }
    if isShuttingDown { Self.shutDown(channel) }
  }

  /// Forgets a connection that has closed.
  func remove(_ channel: any Channel) {
    _ = state.withLock { $0.connections.removeValue(forKey: ObjectIdentifier(channel)) }
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
