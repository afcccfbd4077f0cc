import NIOCore
public import PushlineRPC
import PushlineSchema
public import PushlineWire
import Synchronization

/// One client connection: start calls on it from any task.
///
/// Each call reaches the connection's event loop with one `EventLoop.execute` (none from a
/// task already running there); the caller's task is resumed once, with the call's outcome —
/// or, for a stream, once per batch of responses read together.
public final class RPCConnection: Sendable {
  /// Links a caller's task to its call, so that a cancellation that races the call's start
  /// is seen either way: before the start (the call never starts) or after (a CANCEL is sent).
  final class CallHandle: Sendable {
    private struct State {
      var isCancelled = false
      var callID: UInt32?
      var endReason: (any Error)?
    }

    private let state = Mutex(State())

    /// Whether the caller has cancelled.
    var isCancelled: Bool { state.withLock { $0.isCancelled } }

    /// The call's id once it has started.
    var callID: UInt32? {
      get { state.withLock { $0.callID } }
      set { state.withLock { $0.callID = newValue } }
    }

    /// Why the call ended, when it ended with an error: what a pipeline's later sends fail
    /// with.
    var endReason: (any Error)? {
      get { state.withLock { $0.endReason } }
      set { state.withLock { $0.endReason = newValue } }
    }

    /// Records the caller's cancellation.
    func cancel() {
      state.withLock { $0.isCancelled = true }
    }
  }

  private let channel: any Channel
  private let handler: NIOLoopBound<ClientConnectionHandler>

  init(channel: any Channel, handler: NIOLoopBound<ClientConnectionHandler>) {
    self.channel = channel
    self.handler = handler
  }

  /// Returns what the server's handshake settled — among it the server's clock, for a client
  /// to correct its own before it enforces `expiresAt` — once the server has answered, or
  /// throws ``RPCError`` with its refusal (UNAVAILABLE and a retry-after hint past its accept
  /// rate) or the connection's end: calls need not wait for it, but a client that reports
  /// itself connected should. A cancelled wait throws `CancellationError` at once and leaves
  /// the connection as it is: a server that never answers cannot hold the caller (a client
  /// told to stop).
  @discardableResult
  public func handshake() async throws -> ClientConnectionStateMachine.Server {
    let settled = channel.eventLoop.makePromise(of: ClientConnectionStateMachine.Server.self)
    onLoop { $0.handshake.cascade(to: settled) }
    return try await withTaskCancellationHandler {
      try await settled.futureResult.get()
    } onCancel: {
      settled.fail(CancellationError())  // ignored once the handshake has settled it
    }
  }

  /// Closes the connection: calls still open end UNAVAILABLE.
  func close() async {
    try? await channel.close()
  }

  /// Makes a unary call: one request, one response.
  ///
  /// Cancelling the calling task cancels the call (a CANCEL frame to the server).
  /// - Throws: ``RPCError`` with the call's status when it does not end with OK.
  public func unary<Request: WireMessage, Response: WireMessage>(
    _ method: String, request: Request, response: Response.Type, timeout: Duration? = nil
  ) async throws -> Response {
    let handle = CallHandle()
    let request = request.serializedBytes()
    let bytes = try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { continuation in
        onLoop { $0.startCall(handle, method: method, request: request, timeout: timeout, .unary(continuation)) }
      }
    } onCancel: {
      cancel(handle)
    }
    return try Response.decodingResponse(bytes)
  }

  /// Makes a server-streaming call: one request, then the responses as they arrive.
  ///
  /// The sequence ends when the server ends the call with OK, and throws ``RPCError`` with the
  /// status otherwise. Abandoning the iteration (or cancelling the iterating task) cancels the
  /// call. Responses are buffered on the client as they arrive (deflated ones as they came,
  /// inflated as the iteration reaches them), up to 8 MiB not yet taken:
  /// past that the connection reads nothing more, for any of its calls, until the iteration
  /// has taken half — so a server sending faster than it is consumed meets backpressure.
  public func serverStreaming<Request: WireMessage, Response: WireMessage>(
    _ method: String, request: Request, response: Response.Type, timeout: Duration? = nil
  ) -> RPCResponseStream<Response> {
    let handle = CallHandle()
    let (stream, continuation) = AsyncThrowingStream<[ReceivedResponse], any Error>.makeStream()
    let credit = StreamCredit { [self] in
      onLoop { handler in if let callID = handle.callID { handler.streamDrained(callID: callID) } }
    }
    continuation.onTermination = { termination in
      credit.ended()
      if case .cancelled = termination { self.cancel(handle) }
    }
    let request = request.serializedBytes()
    onLoop { $0.startCall(handle, method: method, request: request, timeout: timeout, .stream(continuation, credit)) }
    return RPCResponseStream(raw: stream, credit: credit)
  }

  /// Opens a pipelined call: requests sent through the returned ``RPCPipeline`` are answered
  /// one by one, in order, on this one call.
  public func pipeline<Request: WireMessage, Response: WireMessage>(
    _ method: String, request: Request.Type, response: Response.Type
  ) -> RPCPipeline<Request, Response> {
    let handle = CallHandle()
    onLoop { $0.startPipeline(handle, method: method) }
    return RPCPipeline(connection: self, handle: handle)
  }

  /// Sends `request` on the pipelined call of `handle` and returns its answer's bytes.
  func send(_ request: [UInt8], on handle: CallHandle) async throws -> [UInt8] {
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { answer in
        onLoop { $0.send(request, on: handle, answer: answer) }
      }
    } onCancel: {
      cancel(handle)
    }
  }

  /// Half-closes the pipelined call of `handle` and waits for its end; cancelling the waiting
  /// task cancels the call, as for every other wait on a call.
  func finish(_ handle: CallHandle) async throws {
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { ended in
        onLoop { $0.finishPipeline(handle, ended: ended) }
      }
    } onCancel: {
      cancel(handle)
    }
  }

  /// Sends a PING and waits for its PONG: a round trip through the server's connection.
  ///
  /// - Throws: `CancellationError` when the task is cancelled first: a server that stopped
  ///   answering holds its caller no longer than that.
  public func ping() async throws {
    let payload = (0..<8).map { _ in UInt8.random(in: 0...255) }
    let handle = CallHandle()
    try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { pong in onLoop { $0.ping(payload: payload, unless: handle, pong) } }
    } onCancel: {
      handle.cancel()
      onLoop { $0.abandonPing(payload: payload) }
    }
  }

  /// Cancels the call of `handle`: a CANCEL to the server once it has started, none at all if
  /// it has not.
  func cancel(_ handle: CallHandle) {
    handle.cancel()
    onLoop { $0.cancel(handle) }
  }

  /// Runs `body` with the connection's handler on its event loop: at once when already there.
  private func onLoop(_ body: @escaping @Sendable (ClientConnectionHandler) -> Void) {
    guard handler.eventLoop.inEventLoop else {
      return handler.eventLoop.execute { [handler] in body(handler.value) }
    }
    body(handler.value)
  }
}
