import Foundation
public import NIOCore
import NIOPosix
public import PushlineRPC
import PushlineSchema
import Synchronization

/// A Pushline RPC server on TCP: it accepts connections and serves each with the methods of
/// its ``RPCRouter``, following ``ServerConnectionStateMachine``.
///
/// Each connection runs as one child task of the server (a discarding task group, so finished
/// connections leave nothing behind); each call's handler runs in a task of its own, so that
/// the call can be cancelled alone. A connection that breaks the protocol gets a GOAWAY naming
/// the violation and is closed; every other connection keeps being served.
public struct RPCServer: Sendable {
  /// Where to listen and how each connection behaves.
  public struct Configuration: Sendable {
    /// The address to bind; loopback by default, so nothing is exposed by accident.
    public var host: String
    /// The port; 0 picks a free one (see ``withRunningServer(_:)``).
    public var port: Int
    public var connection: ServerConnectionStateMachine.Configuration
    /// A connection on which the client sends nothing for this long (up to twice as long; see
    /// `IdleConnectionHandler`) is closed with a GOAWAY: dead clients, and peers that send half
    /// a frame and stop. Longer than the keepalive interval announced to clients, so that a
    /// live client's pings always arrive in time.
    public var idleTimeout: Duration
    /// On shutdown, how long calls in progress may still run after the GOAWAY before they are
    /// cancelled.
    public var gracePeriod: Duration

    /// A configuration listening on `host`:`port`.
    public init(
      host: String = "127.0.0.1", port: Int = 7400, connection: ServerConnectionStateMachine.Configuration = .init(),
      idleTimeout: Duration = .seconds(75), gracePeriod: Duration = .seconds(10)
    ) {
      self.host = host
      self.port = port
      self.connection = connection
      self.idleTimeout = idleTimeout
      self.gracePeriod = gracePeriod
    }
  }

  private let router: RPCRouter
  private let configuration: Configuration

  /// A server for `router`'s methods plus `/pushline.Health/Check`.
  public init(router: RPCRouter, configuration: Configuration = Configuration()) {
    var router = router
    HealthService.register(in: &router)
    self.router = router
    self.configuration = configuration
  }

  /// Binds, runs `body` with the bound address while serving, then shuts down gracefully:
  /// no new connections, a GOAWAY on every connection, calls in progress get the grace period
  /// to finish, then everything still running is cancelled.
  ///
  /// If `body` throws, the server stops at once, without the grace period.
  public func withRunningServer<Result: Sendable>(_ body: (SocketAddress) async throws -> Result) async throws -> Result {
    let listener = try await bind()
    let connections = ConnectionRegistry()
    return try await withThrowingTaskGroup(of: Void.self) { group in
      group.addTask { try await serve(listener, connections: connections) }
      let result: Result
      do {
        result = try await body(listener.channel.localAddress!)
      } catch {
        group.cancelAll()
        throw error
      }
      connections.shutDown()
      try? await listener.channel.close()
      try await group.waitForAll()
      return result
    }
  }

  private typealias Listener = NIOAsyncChannel<NIOAsyncChannel<ConnectionElement, ConnectionElement>, Never>

  private func bind() async throws -> Listener {
    let maxFrameSize = configuration.connection.limits.maxFrameSize
    let idleTimeout = TimeAmount(configuration.idleTimeout)
    return try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
      .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
      .serverChannelOption(.backlog, value: 256)
      .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
      .bind(host: configuration.host, port: configuration.port) { channel in
        channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.addHandlers([
            ByteToMessageHandler(FrameDecoder(maxPayloadLength: maxFrameSize)),
            MessageToByteHandler(FrameEncoder()),
            IdleConnectionHandler(readTimeout: idleTimeout),
          ])
          return try NIOAsyncChannel<ConnectionElement, ConnectionElement>(wrappingChannelSynchronously: channel)
        }
      }
  }

  private func serve(_ listener: Listener, connections registry: ConnectionRegistry) async throws {
    try await withThrowingDiscardingTaskGroup { group in
      try? await listener.executeThenClose { connections in
        for try await connection in connections {
          group.addTask { await serve(connection, registry: registry) }
        }
      }
    }
  }

  /// What the connection's loop reacts to, from the peer and from the call handlers.
  private enum Event: Sendable {
    case received(ConnectionElement)
    case violation(ProtocolViolation)
    case peerClosed
    /// A handler's response message; resumed once it is written (or the call is over).
    case response(callID: UInt32, [UInt8], compressed: Bool, CheckedContinuation<Void, any Error>)
    case finished(callID: UInt32, CallStatus)
    /// The server is shutting down: GOAWAY, then drain.
    case shutDown
    /// The grace period after the GOAWAY is over: cancel what still runs.
    case graceExpired
    /// A call's deadline passed.
    case deadlineExpired(callID: UInt32)
  }

  /// The connections being served, so that a shutdown reaches each of them.
  private final class ConnectionRegistry: Sendable {
    private struct State {
      var isShuttingDown = false
      var nextID = 0
      var connections: [Int: AsyncStream<Event>.Continuation] = [:]
    }

    private let state = Mutex(State())

    /// Registers a connection's event stream; a connection arriving during shutdown is told at once.
    func register(_ events: AsyncStream<Event>.Continuation) -> Int {
      let (id, isShuttingDown) = state.withLock { state in
        state.nextID += 1
        state.connections[state.nextID] = events
        return (state.nextID, state.isShuttingDown)
      }
      if isShuttingDown { events.yield(.shutDown) }
      return id
    }

    func remove(_ id: Int) {
      _ = state.withLock { $0.connections.removeValue(forKey: id) }
    }

    func shutDown() {
      let connections = state.withLock { state in
        state.isShuttingDown = true
        return Array(state.connections.values)
      }
      for events in connections { events.yield(.shutDown) }
    }
  }

  /// A call between its start and its end.
  private struct Call {
    var context: ServerContext
    var requests: [[UInt8]] = []
    var handler: Task<Void, Never>?
    var deadline: Task<Void, Never>?

    func stop() {
      handler?.cancel()
      deadline?.cancel()
    }
  }

  private func serve(_ channel: NIOAsyncChannel<ConnectionElement, ConnectionElement>, registry: ConnectionRegistry) async {
    try? await channel.executeThenClose { inbound, outbound in
      let (events, continuation) = AsyncStream<Event>.makeStream()
      let registration = registry.register(continuation)
      defer { registry.remove(registration) }
      let gracePeriod = configuration.gracePeriod
      await withDiscardingTaskGroup { group in
        group.addTask {
          do {
            for try await element in inbound { continuation.yield(.received(element)) }
            continuation.yield(.peerClosed)
          } catch let violation as ProtocolViolation {
            continuation.yield(.violation(violation))
          } catch {
            continuation.yield(.peerClosed)
          }
        }
        var machine = ServerConnectionStateMachine(configuration: configuration.connection)
        var peer: ServerConnectionStateMachine.Peer?
        var calls: [UInt32: Call] = [:]
        connection: for await event in events {
          let actions: [ServerConnectionStateMachine.Action]
          switch event {
          case .received(let element):
            actions = machine.received(element, serverTimeMillis: Int64(Date().timeIntervalSince1970 * 1_000))
          case .violation(let violation):
            actions = machine.receivedViolation(violation)
          case .peerClosed:
            break connection
          case .response(let callID, let message, let compressed, let written):
            let writes = machine.send(message: message, compressed: compressed, callID: callID)
            guard !writes.isEmpty else {
              written.resume(throwing: RPCError(code: .cancelled, message: "the call is over"))
              continue
            }
            for case .write(let elements) in writes { try? await outbound.write(contentsOf: elements) }
            written.resume()
            continue
          case .finished(let callID, let status):
            calls.removeValue(forKey: callID)?.deadline?.cancel()
            actions = machine.finishCall(callID: callID, status: status)
          case .deadlineExpired(let callID):
            guard let call = calls.removeValue(forKey: callID) else { continue }
            call.stop()
            actions = machine.finishCall(
              callID: callID, status: RPCError(code: .deadlineExceeded, message: "the call's deadline passed").status)
          case .shutDown:
            actions = machine.shutDown()
            group.addTask {
              try? await Task.sleep(for: gracePeriod)
              continuation.yield(.graceExpired)
            }
          case .graceExpired:
            for call in calls.values { call.handler?.cancel() }
            continue
          }
          for action in actions {
            switch action {
            case .write(let elements):
              try? await outbound.write(contentsOf: elements)
            case .connectionReady(let ready):
              peer = ready
            case .startCall(let callID, let start):
              guard let peer else { continue }
              if router.handler(for: start.method) == nil {
                continuation.yield(.finished(callID: callID, RPCError(code: .unimplemented, message: "no method \(start.method)").status))
                continue
              }
              var call = Call(context: ServerContext(peer: peer, start: start))
              if let timeout = call.context.timeout {
                // The deadline runs from the call's start, whatever the handler is doing.
                call.deadline = Task {
                  guard (try? await Task.sleep(for: timeout)) != nil else { return }
                  continuation.yield(.deadlineExpired(callID: callID))
                }
              }
              calls[callID] = call
            case .deliverMessage(let callID, let payload, let compressed):
              guard compressed, let peer else {
                calls[callID]?.requests.append(payload)
                continue
              }
              do throws(RPCError) {
                let inflated = try Deflate.decompress(payload, limit: peer.limits.maxMessageSize)
                calls[callID]?.requests.append(inflated)
              } catch {
                calls.removeValue(forKey: callID)?.stop()
                continuation.yield(.finished(callID: callID, error.status))
              }
            case .deliverEndOfRequests(let callID):
              guard var call = calls[callID], let (_, handler) = router.handler(for: call.context.method) else { continue }
              guard call.requests.count == 1 else {
                continuation.yield(.finished(callID: callID, RPCError(
                  code: .invalidArgument, message: "the method takes one request, got \(call.requests.count)").status))
                continue
              }
              let (request, context) = (call.requests[0], call.context)
              let compresses = context.peer.compression == .deflate
              let respond: RPCRouter.ResponseSink = { message in
                // Compressed here, in the handler's task, not on the connection's loop.
                let compressed = compresses && message.count >= Deflate.threshold
                let bytes = compressed ? Deflate.compress(message) : message
                try await withCheckedThrowingContinuation { written in
                  if case .terminated = continuation.yield(.response(callID: callID, bytes, compressed: compressed, written)) {
                    written.resume(throwing: RPCError(code: .cancelled, message: "the connection closed"))
                  }
                }
              }
              // A task per call, not a child of the connection's group: a CANCEL stops this
              // call's handler alone.
              call.handler = Task {
                do {
                  try await handler(request, respond, context)
                  continuation.yield(.finished(callID: callID, CallStatus(code: StatusCode.ok.rawValue)))
                } catch {
                  let failure = error as? RPCError ?? RPCError(code: .unknown, message: "\(error)")
                  continuation.yield(.finished(callID: callID, failure.status))
                }
              }
              calls[callID] = call
            case .cancelCall(let callID):
              calls.removeValue(forKey: callID)?.stop()
            case .pongReceived:
              break
            case .close(let elements):
              try? await outbound.write(contentsOf: elements)
              break connection
            }
          }
        }
        for call in calls.values { call.stop() }
        continuation.finish()
        group.cancelAll()
      }
    }
  }
}
