import NIOCore
import PushlineRPC
import PushlineSchema
import PushlineWire

/// The client's side of one connection on its event loop: it drives a
/// ``ClientConnectionStateMachine`` with the frames read and with the calls ``RPCConnection``
/// starts, and holds the continuations of the callers waiting on it.
///
/// Callers reach it with one `EventLoop.execute` per call start (none when they already run on
/// the loop). Its writes are flushed once per burst (``FlushCoalescer``). A server stream's
/// responses are handed to its consumer once per read burst, as one batch, rather than one
/// wake-up per message; they are buffered on the client until consumed, up to
/// ``StreamCredit/pauseAt`` bytes per stream: then the connection reads nothing more until
/// that consumer is down to half (the channel's reads wait here).
final class ClientConnectionHandler: ChannelDuplexHandler {
  typealias InboundIn = ConnectionElement
  typealias OutboundIn = ConnectionElement
  typealias OutboundOut = ConnectionElement

  /// Who waits for a call's outcome.
  enum Waiter {
    /// A unary caller.
    case unary(CheckedContinuation<[UInt8], any Error>)
    /// A stream's consumer, which receives the responses in batches.
    case stream(AsyncThrowingStream<[ReceivedResponse], any Error>.Continuation, StreamCredit)
    /// A pipelined call's senders, each waiting for the answer to its request.
    case pipeline(PipelineWaiters)

    /// Ends the call with `error`; a stream's consumer first gets the `received` responses.
    func fail(_ error: any Error, after received: [ReceivedResponse] = []) {
      switch self {
      case .unary(let continuation):
        continuation.resume(throwing: error)
      case .stream(let continuation, _):
        if !received.isEmpty { continuation.yield(received) }
        continuation.finish(throwing: error)
      case .pipeline(let waiters):
        waiters.fail(error)
      }
    }
  }

  private struct Call {
    var handle: RPCConnection.CallHandle
    var waiter: Waiter
    var deadline: Scheduled<Void>?
    /// Responses read and not handed over yet: a unary call's response (inflated), or a
    /// stream's responses of the current read burst (as they came).
    var received: [ReceivedResponse] = []

    /// Keeps a stream's response; true when it is the first of the burst (to hand over at the
    /// burst's end).
    mutating func receive(_ payload: ReceivedResponse) -> Bool {
      received.append(payload)
      return received.count == 1
    }

    func fail(_ error: any Error) {
      deadline?.cancel()
      if case .pipeline = waiter { handle.endReason = error }
      waiter.fail(error, after: received)
    }
  }

  private var machine: ClientConnectionStateMachine
  private let ready: EventLoopPromise<ClientConnectionStateMachine.Server>
  private var server: ClientConnectionStateMachine.Server?
  private var isOpen = true
  private var context: ChannelHandlerContext?
  private var output: FlushCoalescer?
  private var calls: [UInt32: Call] = [:]
  /// The window of requests unanswered on the pipelined calls, made at the first of them.
  private var pipelineWindow: PipelineWindow?
  /// Streams with responses read in the current burst.
  private var streamsWithPending: [UInt32] = []
  /// Streams whose consumers hold ``StreamCredit/pauseAt`` or more: while any does, the
  /// connection reads nothing — the channel's next read waits (``readPending``).
  private var pausingStreams: Set<UInt32> = []
  private var readPending = false
  private var pings: [[UInt8]: CheckedContinuation<Void, any Error>] = [:]
  private var closedReason = RPCError(code: .unavailable, message: "the connection closed")
  /// How long the server has to answer the handshake before the connection is let go.
  private let handshakeTimeout: TimeAmount?

  /// A handler for a connection offering `configuration`; `ready` completes with the handshake,
  /// or fails when the server has not answered it within `handshakeTimeout` — a server that
  /// sends only frames of unknown kinds keeps the connection from going quiet, but is no more
  /// a server the client can use than a silent one.
  init(
    configuration: ClientConnectionStateMachine.Configuration, ready: EventLoopPromise<ClientConnectionStateMachine.Server>,
    handshakeTimeout: TimeAmount? = nil
  ) {
    machine = ClientConnectionStateMachine(configuration: configuration)
    self.ready = ready
    self.handshakeTimeout = handshakeTimeout
  }

  // MARK: Channel events

  func handlerAdded(context: ChannelHandlerContext) {
    self.context = context
    output = FlushCoalescer(context: context)
    if context.channel.isActive { start(context: context) }
  }

  func handlerRemoved(context: ChannelHandlerContext) {
    shutDown()
  }

  func channelActive(context: ChannelHandlerContext) {
    start(context: context)
    context.fireChannelActive()
  }

  /// Sends the preface and the handshake, and gives the server until the handshake timeout to
  /// answer.
  private func start(context: ChannelHandlerContext) {
    execute(machine.start())
    guard let handshakeTimeout else { return }
    context.eventLoop.assumeIsolated().scheduleTask(in: handshakeTimeout) { [self] in
      guard server == nil, isOpen, let context = self.context else { return }
      closedReason = RPCError(code: .unavailable, message: "the server did not answer the handshake within \(handshakeTimeout.nanoseconds / 1_000_000_000) s")
      context.close(promise: nil)
    }
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    output?.readStarted()
    let element = unwrapInboundIn(data)
    if server == nil, case .frame(let frame) = element, frame.kind == .goAway, let goAway = try? GoAway(serializedBytes: frame.payload) {
      // Past the server's accept rate, the GOAWAY says when to come back (UNAVAILABLE); with
      // no common version, that retrying will not help (FAILED_PRECONDITION).
      closedReason = RPCError(status: ClientConnectionStateMachine.refusalStatus(of: goAway))
    }
    execute(machine.received(element))
  }

  func channelReadComplete(context: ChannelHandlerContext) {
    handOverPendingResponses()
    output?.readCompleted()
    context.fireChannelReadComplete()
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    guard let violation = error as? ProtocolViolation else {
      context.close(promise: nil)
      return
    }
    guard isOpen else { return }
    closedReason = RPCError(code: .internal, message: "the server broke the protocol: \(violation)")
    execute(machine.receivedViolation(violation))
    shutDown()
  }

  func channelInactive(context: ChannelHandlerContext) {
    shutDown()
    context.fireChannelInactive()
  }

  // MARK: Input from the callers (on the event loop)

  /// Starts a call unless the connection is closed or the caller has already cancelled.
  func startCall(
    _ handle: RPCConnection.CallHandle, method: String, request: [UInt8], timeout: Duration?, _ waiter: Waiter
  ) {
    guard isOpen, let context else { return waiter.fail(closedReason) }
    guard !handle.isCancelled else { return waiter.fail(RPCError(code: .cancelled, message: "cancelled by the client")) }
    var start = CallStart(method: method)
    start.timeoutMillis = timeout.map {
      UInt32(clamping: $0.components.seconds * 1_000 + $0.components.attoseconds / 1_000_000_000_000_000)
    }
    let (callID, actions) = machine.startCall(start)
    guard let callID else { return waiter.fail(closedReason) }
    handle.callID = callID
    // The client enforces the deadline too: the server's STATUS may never arrive.
    let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
    let deadline = timeout.map { timeout in
      context.eventLoop.scheduleTask(in: TimeAmount(timeout)) { handler.value.deadlinePassed(callID: callID) }
    }
    calls[callID] = Call(handle: handle, waiter: waiter, deadline: deadline)
    let (message, compressed) = Deflate.prepare(request, negotiated: server?.compression == .deflate)
    execute(actions + machine.send(message: message, compressed: compressed, callID: callID) + machine.halfClose(callID: callID))
  }

  /// Opens a pipelined call, which sends nothing until ``send(_:on:answer:)``, unless the
  /// connection is closed or the caller has already cancelled (its sends then fail).
  func startPipeline(_ handle: RPCConnection.CallHandle, method: String) {
    guard isOpen, !handle.isCancelled else { return }  // its sends fail: the call is not there
    let (callID, actions) = machine.startCall(CallStart(method: method))
    guard let callID, let limits = machine.limits else {
      handle.endReason = closedReason  // a GOAWAY came: the sends fail with its retry hint
      return
    }
    handle.callID = callID
    // Before the handshake, the protocol's default; resized to the server's once it is done.
    if pipelineWindow == nil { pipelineWindow = PipelineWindow(size: limits.maxConcurrentCalls) }
    calls[callID] = Call(handle: handle, waiter: .pipeline(PipelineWaiters()))
    execute(actions)
  }

  /// Sends `request` on the pipelined call of `handle`; `answer` gets its response, or the
  /// call's end.
  func send(_ request: [UInt8], on handle: RPCConnection.CallHandle, answer: CheckedContinuation<[UInt8], any Error>) {
    guard isOpen, let callID = handle.callID, let waiters = pipelineWaiters(of: callID), !waiters.isClosing,
      let pipelineWindow
    else {
      return answer.resume(throwing: pipelineGoneReason(handle))
    }
    pipelineWindow.submit(request, callID: callID, waiters: waiters, answer: answer, send: sendRequest)
  }

  /// Sends a request of the pipelined call `callID`.
  private func sendRequest(_ request: [UInt8], _ callID: UInt32) {
    let (message, compressed) = Deflate.prepare(request, negotiated: server?.compression == .deflate)
    execute(machine.send(message: message, compressed: compressed, callID: callID))
  }

  /// Half-closes the pipelined call of `handle`; `ended` resumes when the call ends.
  func finishPipeline(_ handle: RPCConnection.CallHandle, ended: CheckedContinuation<Void, any Error>) {
    guard isOpen, let callID = handle.callID, let waiters = pipelineWaiters(of: callID), !waiters.isClosing else {
      return ended.resume(throwing: pipelineGoneReason(handle))
    }
    waiters.close(ended)
    // With requests still waiting for room, the half-close follows the last of them.
    if waiters.queued == 0 { halfClose(callID) }
  }

  private func halfClose(_ callID: UInt32) {
    execute(machine.halfClose(callID: callID))
  }

  /// Takes `callID` out of the calls. A pipelined call's unanswered requests give their room
  /// in the window back, and its requests still waiting for room fail with `error`.
  private func removeCall(_ callID: UInt32, failingWaitingRequestsWith error: @autoclosure () -> any Error) -> Call? {
    guard let call = calls.removeValue(forKey: callID) else { return nil }
    release(call, of: callID, failingWaitingRequestsWith: error())
    return call
  }

  /// Lets go of what `call`, taken out of the calls, held: a stream's hold on reading (an ended
  /// stream gets nothing more), a pipelined call's room in the window (its requests still
  /// waiting for room fail with `error`).
  private func release(_ call: Call, of callID: UInt32, failingWaitingRequestsWith error: @autoclosure () -> any Error) {
    streamDrained(callID: callID)
    if case .pipeline(let waiters) = call.waiter, let pipelineWindow {
      pipelineWindow.dropQueued(of: callID, failingWith: error())
      pipelineWindow.free(waiters.unansweredCount, send: sendRequest, halfClose: halfClose)
    }
  }

  /// Why a pipelined call cannot take a request: the caller cancelled it, it has been
  /// half-closed, or it has ended (or never started: the connection was closed).
  private func pipelineGoneReason(_ handle: RPCConnection.CallHandle) -> any Error {
    if let reason = handle.endReason { return reason }
    if handle.isCancelled { return RPCError(code: .cancelled, message: "cancelled by the client") }
    if let callID = handle.callID, pipelineWaiters(of: callID)?.isClosing == true { return PipelineWaiters.finished }
    return isOpen ? RPCError(code: .cancelled, message: "the call has ended") : closedReason
  }

  private func pipelineWaiters(of callID: UInt32) -> PipelineWaiters? {
    guard let index = calls.index(forKey: callID), case .pipeline(let waiters) = calls.values[index].waiter else { return nil }
    return waiters
  }

  /// The caller abandoned its call: CANCEL to the server.
  func cancel(_ handle: RPCConnection.CallHandle) {
    guard isOpen, let callID = handle.callID, calls[callID] != nil else { return }
    execute(machine.cancel(callID: callID))
  }

  /// Sends a PING with `payload` and resumes `pong` when its PONG arrives, unless the caller
  /// of `handle` has cancelled already.
  func ping(payload: [UInt8], unless handle: RPCConnection.CallHandle, _ pong: CheckedContinuation<Void, any Error>) {
    guard !handle.isCancelled else { return pong.resume(throwing: CancellationError()) }
    guard isOpen, machine.limits != nil else { return pong.resume(throwing: closedReason) }  // started
    pings[payload] = pong
    execute(machine.ping(payload: payload))
  }

  /// The caller waiting for the PONG of `payload` has cancelled: it fails with
  /// `CancellationError`, and the PONG, if it comes, is ignored.
  func abandonPing(payload: [UInt8]) {
    pings.removeValue(forKey: payload)?.resume(throwing: CancellationError())
  }

  /// Completes once the handshake is done (or fails with the reason the connection closed).
  var handshake: EventLoopFuture<ClientConnectionStateMachine.Server> { ready.futureResult }

  // MARK: Actions

  private func execute(_ actions: [ClientConnectionStateMachine.Action]) {
    for action in actions {
      switch action {
      case .write(let elements):
        for element in elements where !isUnreadPong(element) { output?.write(element) }
      case .connectionReady(let settled):
        server = settled
        pipelineWindow?.resize(to: settled.limits.maxConcurrentCalls, send: sendRequest, halfClose: halfClose)
        if let millis = settled.keepaliveIntervalMillis { keepToServerKeepalive(millis: millis) }
        ready.succeed(settled)
      case .deliverMessage(let callID, let payload, let compressed):
        deliver(payload, compressed: compressed, callID: callID)
      case .finishCall(let callID, let status):
        finish(callID: callID, status: status)
      case .pongReceived(let payload):
        pings.removeValue(forKey: payload)?.resume()
      case .goAwayReceived(let goAway):
        closedReason = RPCError(
          code: .unavailable, message: goAway.message ?? "the server went away", retryAfterMillis: goAway.retryAfterMillis)
      case .close(let elements):
        output?.close(after: elements)
        shutDown()
      }
    }
  }

  /// Whether `element` is a PONG the server would not read: what the client wrote before it
  /// still waits to be sent. A server sending PINGs without reading would otherwise have the
  /// client queue a PONG for each, without end; a server that reads gets its PONGs.
  private func isUnreadPong(_ element: ConnectionElement) -> Bool {
    guard case .frame(let frame) = element, frame.kind == .pong, let context else { return false }
    return !context.channel.isWritable
  }

  /// The shortest keepalive interval a server may have the client keep to: one announcing less
  /// (0 included) is pinged this often, so that a buggy or hostile server cannot make it flood
  /// the connection with PINGs (nor spend the server's ping budget in moments).
  static let shortestServerKeepalive = TimeAmount.seconds(1)

  /// Has the `IdleConnectionHandler` below ping at least every `millis` (not below
  /// ``shortestServerKeepalive``), as the server expects to hear from an idle client; the
  /// client's own interval stays when it is shorter.
  private func keepToServerKeepalive(millis: UInt32) {
    let interval = max(TimeAmount.milliseconds(Int64(millis)), Self.shortestServerKeepalive)
    context?.triggerUserOutboundEvent(IdleConnectionHandler.PeerKeepaliveInterval(interval: interval), promise: nil)
  }

  private func deliver(_ payload: [UInt8], compressed: Bool, callID: UInt32) {
    guard let index = calls.index(forKey: callID) else { return }
    var response = ReceivedResponse(bytes: payload)
    if compressed, let server {
      // A flag of 1 where the handshake agreed on no compression ends the call, as a server
      // ends one of a client's (PROTOCOL 2.9): the bytes are not what they claim.
      guard server.compression == .deflate else {
        return abandon(callID, with: RPCError(code: .internal, message: "a compressed message on a connection without compression"))
      }
      response = ReceivedResponse(bytes: payload, inflatedLimit: server.limits.maxMessageSize)
    }
    switch calls.values[index].waiter {
    case .stream:
      // In place: no copy of the call's responses per message. Inflated by the consumer.
      if calls.changeValue(forKey: callID, { $0.receive(response) }) == true { streamsWithPending.append(callID) }
    case .unary where !calls.values[index].received.isEmpty:
      // Kept, a server's further responses would pile up until its STATUS, if ever.
      abandon(callID, with: RPCError(code: .internal, message: "a unary call answered with more than one response"))
    case .unary:
      guard let message = inflated(response, of: callID) else { return }
      calls.values[index].received.append(ReceivedResponse(bytes: message))
    case .pipeline(let waiters):
      guard let message = inflated(response, of: callID) else { return }
      if waiters.answer(with: message) { pipelineWindow?.free(1, send: sendRequest, halfClose: halfClose) }
    }
  }

  /// `response`'s message, inflated if it came compressed; `nil` when it does not inflate,
  /// its call then ended (``abandon(_:with:)``).
  private func inflated(_ response: ReceivedResponse, of callID: UInt32) -> [UInt8]? {
    do throws(RPCError) {
      return try response.message()
    } catch {
      abandon(callID, with: error)
      return nil
    }
  }

  /// Ends `callID` on the client's side with `error`: the CANCEL first, then the call's
  /// waiters fail — its removal frees room in the pipelined calls' window, and requests of
  /// another call waiting for it must follow the CANCEL, which the server counts by.
  private func abandon(_ callID: UInt32, with error: RPCError) {
    guard let call = calls.removeValue(forKey: callID) else { return }
    execute(machine.cancel(callID: callID))  // its end ("cancelled by the client") finds the call gone
    release(call, of: callID, failingWaitingRequestsWith: error)
    call.fail(error)
  }

  /// Stops reading while the consumer of `callID` catches up.
  private func pauseReading(for callID: UInt32) {
    if pausingStreams.isEmpty { context?.triggerUserOutboundEvent(IdleConnectionHandler.ReadsHeld(isHeld: true), promise: nil) }
    pausingStreams.insert(callID)
  }

  /// The consumer of `callID` is down to half its credit, or gone: reading resumes once no
  /// stream holds it back.
  func streamDrained(callID: UInt32) {
    guard pausingStreams.remove(callID) != nil, pausingStreams.isEmpty, let context else { return }
    context.triggerUserOutboundEvent(IdleConnectionHandler.ReadsHeld(isHeld: false), promise: nil)
    guard readPending else { return }
    readPending = false
    context.read()
  }

  /// The channel asks to read on (after each read, with `autoRead`): held back while a stream's
  /// consumer is behind.
  func read(context: ChannelHandlerContext) {
    guard pausingStreams.isEmpty else {
      readPending = true
      return
    }
    context.read()
  }

  private func handOverPendingResponses() {
    for callID in streamsWithPending {
      guard let call = calls[callID], case .stream(let continuation, let credit) = call.waiter, !call.received.isEmpty else { continue }
      calls.changeValue(forKey: callID) { $0.received = [] }
      continuation.yield(call.received)
      if credit.handedOver(call.received.reduce(0) { $0 + $1.bytes.count }) { pauseReading(for: callID) }
    }
    streamsWithPending.removeAll(keepingCapacity: true)
  }

  private func finish(callID: UInt32, status: CallStatus) {
    guard let call = removeCall(callID, failingWaitingRequestsWith: RPCError(status: status)) else { return }
    guard status.code == StatusCode.ok.rawValue else { return call.fail(RPCError(status: status)) }
    call.deadline?.cancel()
    switch call.waiter {
    case .unary(let continuation):
      guard let response = call.received.last else {
        return continuation.resume(throwing: RPCError(code: .internal, message: "the call ended OK without a response"))
      }
      continuation.resume(returning: response.bytes)
    case .stream(let continuation, _):
      if !call.received.isEmpty { continuation.yield(call.received) }
      continuation.finish()
    case .pipeline(let waiters):
      waiters.ended()
    }
  }

  private func deadlinePassed(callID: UInt32) {
    guard isOpen, calls[callID] != nil else { return }
    abandon(callID, with: RPCError(code: .deadlineExceeded, message: "the call's deadline passed"))
  }

  /// The connection is closing: every call, ping and handshake still waiting fails with the
  /// reason, and every later request fails at once.
  private func shutDown() {
    guard isOpen else { return }
    isOpen = false
    context = nil
    output = nil
    _ = machine.connectionClosed()
    let ended = calls
    calls = [:]
    for (callID, call) in ended {
      pipelineWindow?.dropQueued(of: callID, failingWith: closedReason)
      call.fail(closedReason)
    }
    if server == nil { ready.fail(closedReason) }
    for ping in pings.values { ping.resume(throwing: closedReason) }
    pings = [:]
  }
}

@available(*, unavailable)
extension ClientConnectionHandler: Sendable {}
