import NIOCore
import NIOPosix
public import PushlineRPC
import PushlineSchema
public import PushlineWire
import Synchronization

/// A Pushline RPC client on TCP: one connection, many concurrent calls.
///
/// ```swift
/// try await RPCClient.withConnection(host: "127.0.0.1", port: 7400) { connection in
///   let health = try await connection.unary(
///     HealthService.checkMethod, request: HealthCheckRequest(), response: HealthCheckResponse.self)
/// }
/// ```
public enum RPCClient {
  /// How the client keeps a quiet connection alive and notices a dead server.
  public struct Keepalive: Sendable {
    /// Send a PING when nothing has been sent for this long.
    public var interval: Duration
    /// Declare the server dead (GOAWAY, close, calls end UNAVAILABLE) when nothing has been
    /// received for this long (up to twice as long; see `IdleConnectionHandler`). Pings are
    /// answered, so a live server is never quiet this long.
    public var timeout: Duration

    /// Pings after 20 s of quiet; a server silent for 60 s is dead.
    public init(interval: Duration = .seconds(20), timeout: Duration = .seconds(60)) {
      self.interval = interval
      self.timeout = timeout
    }
  }

  /// Connects, completes the handshake, runs `body` with the connection, then closes it.
  ///
  /// - Throws: ``RPCError`` with UNAVAILABLE when the server cannot be reached or refuses the
  ///   handshake (the GOAWAY's reason in the message), and whatever `body` throws.
  public static func withConnection<Result: Sendable>(
    host: String, port: Int, configuration: ClientConnectionStateMachine.Configuration = .init(),
    keepalive: Keepalive = Keepalive(), _ body: (RPCConnection) async throws -> Result
  ) async throws -> Result {
    let channel: NIOAsyncChannel<ConnectionElement, ConnectionElement>
    do {
      channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .channelOption(.socketOption(.tcp_nodelay), value: 1)
        .connect(host: host, port: port) { channel in
          channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandlers([
              ByteToMessageHandler(FrameDecoder(maxPayloadLength: configuration.limits.maxFrameSize)),
              MessageToByteHandler(FrameEncoder()),
              IdleConnectionHandler(readTimeout: TimeAmount(keepalive.timeout), pingInterval: TimeAmount(keepalive.interval)),
            ])
            return try NIOAsyncChannel<ConnectionElement, ConnectionElement>(wrappingChannelSynchronously: channel)
          }
        }
    } catch {
      throw RPCError(code: .unavailable, message: "cannot connect to \(host):\(port): \(error)")
    }
    return try await channel.executeThenClose { inbound, outbound in
      let (events, continuation) = AsyncStream<RPCConnection.Event>.makeStream()
      let connection = RPCConnection(events: continuation)
      return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
          do {
            for try await element in inbound { continuation.yield(.received(element)) }
          } catch let violation as ProtocolViolation {
            continuation.yield(.violation(violation))
          } catch {}
          continuation.yield(.closed)
        }
        group.addTask {
          await RPCConnection.run(events: events, feedback: continuation, outbound: outbound, configuration: configuration)
        }
        defer {
          continuation.finish()
          group.cancelAll()
        }
        _ = try await connection.ready()
        return try await body(connection)
      }
    }
  }
}

/// One client connection: start calls on it from any task.
public final class RPCConnection: Sendable {
  enum Event: Sendable {
    case received(ConnectionElement)
    case violation(ProtocolViolation)
    case closed
    case ready(CheckedContinuation<ClientConnectionStateMachine.Server, any Error>)
    case unary(CallHandle, method: String, request: [UInt8], timeout: Duration?, CheckedContinuation<[UInt8], any Error>)
    case serverStreaming(CallHandle, method: String, request: [UInt8], timeout: Duration?, AsyncThrowingStream<[UInt8], any Error>.Continuation)
    case cancel(CallHandle)
    case deadline(CallHandle)
    case ping([UInt8], CheckedContinuation<Void, any Error>)
  }

  /// Links a caller's task to its call, so that a cancellation that races the call's start
  /// is seen either way: before the start (the call never starts) or after (a CANCEL is sent).
  final class CallHandle: Sendable {
    let isCancelled = Mutex(false)
  }

  private let events: AsyncStream<Event>.Continuation

  init(events: AsyncStream<Event>.Continuation) { self.events = events }

  /// Waits for the handshake and returns what it settled.
  func ready() async throws -> ClientConnectionStateMachine.Server {
    try await withCheckedThrowingContinuation { events.yield(.ready($0)) }
  }

  /// Makes a unary call: one request, one response.
  ///
  /// Cancelling the calling task cancels the call (a CANCEL frame to the server).
  /// - Throws: ``RPCError`` with the call's status when it does not end with OK.
  public func unary<Request: WireMessage, Response: WireMessage>(
    _ method: String, request: Request, response: Response.Type, timeout: Duration? = nil
  ) async throws -> Response {
    let handle = CallHandle()
    let bytes = try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        events.yield(.unary(handle, method: method, request: request.serializedBytes(), timeout: timeout, continuation))
      }
    } onCancel: {
      handle.isCancelled.withLock { $0 = true }
      events.yield(.cancel(handle))
    }
    do {
      return try Response(serializedBytes: bytes)
    } catch {
      throw RPCError(code: .internal, message: "the response does not decode: \(Response.protoName): \(error)")
    }
  }

  /// Makes a server-streaming call: one request, then the responses as they arrive.
  ///
  /// The sequence ends when the server ends the call with OK, and throws ``RPCError`` with the
  /// status otherwise. Abandoning the iteration (or cancelling the iterating task) cancels the
  /// call. Responses are buffered on the client as they arrive.
  public func serverStreaming<Request: WireMessage, Response: WireMessage>(
    _ method: String, request: Request, response: Response.Type, timeout: Duration? = nil
  ) -> RPCResponseStream<Response> {
    let handle = CallHandle()
    let (stream, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
    continuation.onTermination = { [events] termination in
      if case .cancelled = termination {
        handle.isCancelled.withLock { $0 = true }
        events.yield(.cancel(handle))
      }
    }
    events.yield(.serverStreaming(handle, method: method, request: request.serializedBytes(), timeout: timeout, continuation))
    return RPCResponseStream(raw: stream)
  }

  /// Sends a PING and waits for its PONG: a round trip through the server's connection.
  public func ping() async throws {
    let payload = (0..<8).map { _ in UInt8.random(in: 0...255) }
    try await withCheckedThrowingContinuation { events.yield(.ping(payload, $0)) }
  }

  /// The connection's loop: the state machine and the continuations of the calls waiting on it.
  static func run(
    events: AsyncStream<Event>, feedback: AsyncStream<Event>.Continuation,
    outbound: NIOAsyncChannelOutboundWriter<ConnectionElement>,
    configuration: ClientConnectionStateMachine.Configuration
  ) async {
    var machine = ClientConnectionStateMachine(configuration: configuration)
    var server: ClientConnectionStateMachine.Server?
    var readyWaiters: [CheckedContinuation<ClientConnectionStateMachine.Server, any Error>] = []
    enum Waiter {
      case unary(CheckedContinuation<[UInt8], any Error>, response: [UInt8]?)
      case stream(AsyncThrowingStream<[UInt8], any Error>.Continuation)

      func fail(_ error: any Error) {
        switch self {
        case .unary(let continuation, _): continuation.resume(throwing: error)
        case .stream(let continuation): continuation.finish(throwing: error)
        }
      }
    }
    var calls: [UInt32: (handle: CallHandle, waiter: Waiter, deadline: Task<Void, Never>?)] = [:]
    var pings: [[UInt8]: CheckedContinuation<Void, any Error>] = [:]
    var closedReason = RPCError(code: .unavailable, message: "the connection closed")

    func execute(_ actions: [ClientConnectionStateMachine.Action]) async -> Bool {
      for action in actions {
        switch action {
        case .write(let elements):
          try? await outbound.write(contentsOf: elements)
        case .connectionReady(let settled):
          server = settled
          for waiter in readyWaiters { waiter.resume(returning: settled) }
          readyWaiters = []
        case .deliverMessage(let callID, var payload, let compressed):
          if compressed, let server {
            do throws(RPCError) {
              payload = try Deflate.decompress(payload, limit: server.limits.maxMessageSize)
            } catch {
              guard let call = calls.removeValue(forKey: callID) else { continue }
              call.deadline?.cancel()
              call.waiter.fail(error)
              guard await execute(machine.cancel(callID: callID)) else { return false }
              continue
            }
          }
          switch calls[callID]?.waiter {
          case .unary(let continuation, _): calls[callID]?.waiter = .unary(continuation, response: payload)
          case .stream(let continuation): continuation.yield(payload)
          case nil: break
          }
        case .finishCall(let callID, let status):
          guard let call = calls.removeValue(forKey: callID) else { continue }
          call.deadline?.cancel()
          switch (call.waiter, status.code == StatusCode.ok.rawValue) {
          case (.unary(let continuation, let response?), true):
            continuation.resume(returning: response)
          case (.unary(let continuation, nil), true):
            continuation.resume(throwing: RPCError(code: .internal, message: "the call ended OK without a response"))
          case (.stream(let continuation), true):
            continuation.finish()
          case (let waiter, false):
            waiter.fail(RPCError(status: status))
          }
        case .pongReceived(let payload):
          pings.removeValue(forKey: payload)?.resume()
        case .goAwayReceived(let goAway):
          closedReason = RPCError(
            code: .unavailable, message: goAway.message ?? "the server went away", retryAfterMillis: goAway.retryAfterMillis)
        case .close(let elements):
          try? await outbound.write(contentsOf: elements)
          return false
        }
      }
      return true
    }

    /// Starts a call unless the connection is closed or the caller already cancelled; false
    /// when the connection must shut down.
    func startCall(_ handle: CallHandle, _ method: String, _ request: [UInt8], _ timeout: Duration?, _ waiter: Waiter) async -> Bool {
      guard isOpen else {
        waiter.fail(closedReason)
        return true
      }
      guard !handle.isCancelled.withLock({ $0 }) else {
        waiter.fail(RPCError(code: .cancelled, message: "cancelled by the client"))
        return true
      }
      var start = CallStart(method: method)
      start.timeoutMillis = timeout.map { UInt32(clamping: $0.components.seconds * 1_000 + $0.components.attoseconds / 1_000_000_000_000_000) }
      let (callID, actions) = machine.startCall(start)
      guard let callID else {
        waiter.fail(closedReason)
        return true
      }
      // The client enforces the deadline too: the server's STATUS may never arrive.
      let deadline = timeout.map { timeout in
        Task {
          guard (try? await Task.sleep(for: timeout)) != nil else { return }
          feedback.yield(.deadline(handle))
        }
      }
      calls[callID] = (handle, waiter, deadline)
      let compressed = server?.compression == .deflate && request.count >= Deflate.threshold
      let message = compressed ? Deflate.compress(request) : request
      return await execute(actions + machine.send(message: message, compressed: compressed, callID: callID) + machine.halfClose(callID: callID))
    }

    var isOpen = await execute(machine.start())
    func shutDown() {
      isOpen = false
      for action in machine.connectionClosed() {
        if case .finishCall(let callID, _) = action { calls.removeValue(forKey: callID)?.waiter.fail(closedReason) }
      }
      for call in calls.values {
        call.deadline?.cancel()
        call.waiter.fail(closedReason)
      }
      calls = [:]
      for waiter in readyWaiters { waiter.resume(throwing: closedReason) }
      readyWaiters = []
      for ping in pings.values { ping.resume(throwing: closedReason) }
      pings = [:]
    }
    // Runs until the stream is finished, when the connection's scope ends; once the
    // connection has closed, every new request fails at once with the reason.
    for await event in events {
      switch event {
      case .received(let element):
        guard isOpen else { continue }
        if case .frame(let frame) = element, frame.kind == .goAway, server == nil,
          let goAway = try? GoAway(serializedBytes: frame.payload)
        {
          closedReason = RPCError(code: .unavailable, message: "the server refused the connection: \(goAway.message ?? "")")
        }
        if await !execute(machine.received(element)) { shutDown() }
      case .violation(let violation):
        guard isOpen else { continue }
        closedReason = RPCError(code: .internal, message: "the server broke the protocol: \(violation)")
        _ = await execute(machine.receivedViolation(violation))
        shutDown()
      case .closed:
        if isOpen { shutDown() }
      case .ready(let waiter):
        if let server, isOpen {
          waiter.resume(returning: server)
        } else if isOpen {
          readyWaiters.append(waiter)
        } else {
          waiter.resume(throwing: closedReason)
        }
      case .unary(let handle, let method, let request, let timeout, let continuation):
        if await !startCall(handle, method, request, timeout, .unary(continuation, response: nil)) { shutDown() }
      case .serverStreaming(let handle, let method, let request, let timeout, let continuation):
        if await !startCall(handle, method, request, timeout, .stream(continuation)) { shutDown() }
      case .deadline(let handle):
        guard isOpen, let callID = calls.first(where: { $0.value.handle === handle })?.key,
          let call = calls.removeValue(forKey: callID)
        else { continue }
        call.waiter.fail(RPCError(code: .deadlineExceeded, message: "the call's deadline passed"))
        if await !execute(machine.cancel(callID: callID)) { shutDown() }
      case .cancel(let handle):
        guard isOpen, let callID = calls.first(where: { $0.value.handle === handle })?.key else { continue }
        if await !execute(machine.cancel(callID: callID)) { shutDown() }
      case .ping(let payload, let continuation):
        guard isOpen, server != nil else {
          continuation.resume(throwing: closedReason)
          continue
        }
        pings[payload] = continuation
        _ = await execute(machine.ping(payload: payload))
      }
    }
    if isOpen { shutDown() }
    outbound.finish()
  }
}
