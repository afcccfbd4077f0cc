import Logging
import NIOCore
import PushlineRPC
import PushlineSchema
import PushlineWire

/// Serves one connection on its event loop: it drives a ``ServerConnectionStateMachine`` with
/// the frames read and executes the machine's actions there, with no task or actor between the
/// socket and the machine.
///
/// Each call's handler runs in a task of its own (so that a CANCEL or a deadline stops it
/// alone) whose executor preference is the connection's event loop: a handler's response is
/// written by a plain call on the loop (``CallResponder``), and its status when it returns —
/// unless it handed its stream to a pump (``CallPump``), which then streams on without the
/// task and ends the call when its source does. A completing unary handler runs on the loop
/// with no task at all, and its answer comes back through the connection's ``AnswerInbox``; so
/// does a pipelined call's handler, once per request (``PipelinedCall``).
/// Writes are not flushed one by one but once per burst (``FlushCoalescer``).
///
/// Backpressure: a response is written at once while the channel is writable. A write that
/// fills the channel's buffer (its high watermark) flushes; if the buffer is still full, the
/// writer waits until `channelWritabilityChanged` reports it writable again (a pump stops
/// pulling until then), so a slow reader makes its handlers wait, or leaves the responses in
/// their source, rather than the server's memory grow.
///
/// A graceful shutdown arrives as the inbound user event ``ShutDown``: GOAWAY, and each pumped
/// stream hears that its connection is going away; then the grace period, then the handlers
/// still running are cancelled and the other calls still open end with UNAVAILABLE; a handler
/// that ignores its cancellation has ``forcedCloseMargin`` more before the connection closes
/// without it. The peer's end of file (`ChannelEvent.inputClosed`) starts the same, without the
/// GOAWAY: the unary and pipelined calls it finished sending are answered, its streams end at
/// once, and the connection closes once the calls have ended.
final class ServerConnectionHandler: ChannelInboundHandler {
  typealias InboundIn = ConnectionElement
  typealias OutboundOut = ConnectionElement

  /// The inbound user event that begins a graceful shutdown of the connection.
  struct ShutDown: Sendable {
    /// When the client should come back, for its GOAWAY: drawn per connection from the
    /// server's reconnect spread (``ConnectionRegistry``).
    var retryAfterMillis: UInt32?
  }

  /// What became of a response message handed to ``send(_:compressed:callID:)``.
  enum SendOutcome {
    /// Written; the channel takes more.
    case sent
    /// Written, and it filled the channel's buffer, which was flushed and drained at once: the
    /// writer should let the loop turn (read, serve other calls) before writing more.
    case sentAndFlushed
    /// Written, and the channel's buffer is full: wait for ``waitUntilWritable(callID:_:)``.
    case sentMustWait
    /// Not written: the call is over.
    case callOver
  }

  /// What a call holds only until its handler runs, boxed so that a long-lived call (a stream)
  /// costs little: its context, its handler and its request.
  private final class Opening {
    let context: ServerContext
    let implementation: RPCRouter.Implementation
    /// Whether the method answers with one response (counted against ``maxRunningTasks`` when
    /// its handler runs in a task; a stream's may run as long as the call).
    let isUnary: Bool
    /// The call's request as it arrived — deflated or not — once it has (the state machine
    /// refuses a second one). Inflated only when the handler runs: until then the call holds
    /// the bytes the state machine counts against the connection's budget, not up to a
    /// thousand times as many.
    var request: (bytes: ArraySlice<UInt8>, isCompressed: Bool)?

    init(context: ServerContext, implementation: RPCRouter.Implementation, isUnary: Bool) {
      self.context = context
      self.implementation = implementation
      self.isUnary = isUnary
    }
  }

  /// What a call's requests go to: one word, as a subscriber's call lives as long as its
  /// connection.
  private enum Receiver {
    /// A call that takes one request, until its handler runs.
    case opening(Opening)
    /// A pipelined call's handler and answers, for the call's whole life.
    case pipeline(PipelinedCall)
  }

  /// A call between its start and its end.
  private struct Call {
    var receiver: Receiver?
    var task: Task<Void, Never>?
    var deadline: Scheduled<Void>?
    /// A streaming handler's write waiting for the channel to become writable.
    var writer: CheckedContinuation<Void, any Error>?
    /// The call's pump, if its handler handed the stream to one.
    var pump: CallPump?
    /// Whether the pump waits for the channel to become writable.
    var pumpAwaitsWritable = false
    /// Whether the call is a server stream (not unary, not pipelined).
    var isStream = false
  }

  private var machine: ServerConnectionStateMachine
  /// The actions of the frame being read, in one array reused for every frame of a read burst.
  private var burstActions: [ServerConnectionStateMachine.Action] = []
  private let router: RPCRouter
  private let gracePeriod: TimeAmount
  private let logger: Logger
  /// The server's allowance of lines about connections that broke the protocol.
  private let violationLog: LogBudget
  private var peer: ServerConnectionStateMachine.Peer?
  private var calls: [UInt32: Call] = [:]
  /// The unary handler tasks started and not yet returned.
  private var runningTasks = 0
  /// The calls whose handlers wait to start — for the channel to become writable, or for a
  /// running unary task to return (``maxRunningTasks``) — in the order they became ready: a
  /// peer that sends calls without reading their answers gets no more responses made (a
  /// GetCards: a topic's snapshot) than a few tasks and the channel's buffer hold. `nil` when
  /// none waits: most connections never need one (an idle subscriber's 200 bytes).
  private var deferredStarts: CircularBuffer<UInt32>?
  /// How many unary handler tasks a connection runs at once; its later unary calls wait to
  /// start. (Streams are not counted: a stream's handler may run as long as its call.)
  static let maxRunningTasks = 16
  /// Set while the handler is in an active channel's pipeline.
  private var context: ChannelHandlerContext?
  private var output: FlushCoalescer?
  private var executor: EventLoopTaskExecutor?
  /// Made at the first completing call: most connections (a subscriber's) never need one.
  private var inbox: AnswerInbox?
  private var pumps: PumpScheduler?
  private var graceTimer: Scheduled<Void>?
  /// Set at the end of the grace period while handlers still run: the close that does not wait
  /// for them any longer.
  private var forcedClose: Scheduled<Void>?
  /// How long handlers cancelled at the end of the grace period have to return before their
  /// connection closes regardless: a handler that ignores its cancellation must not hold the
  /// connection, and with it the server's shutdown, open for ever.
  static let forcedCloseMargin = TimeAmount.seconds(1)
  /// Pending until the handshake arrives (a scheduled callback, with no promise or closure,
  /// cancelled at the handshake). Before the handler is added, how long the client has for it,
  /// if set.
  private var handshakeDeadline: HandshakeDeadline.State
  /// Set once the connection retires: the shutdown's GOAWAY is sent, or the peer has finished
  /// sending.
  private var isGoingAway = false
  /// The channel's writability as its last change said (NIO reports each change on the loop,
  /// as the write or flush that makes it happens): read at every response written, where asking
  /// the channel would go through its pipeline and an atomic each time.
  private var channelIsWritable = true
  /// Set once a call of the connection hands its stream to a pump: only then do answers look
  /// for stream responses to send ahead of them (a publisher's connection never does).
  private var hasPumpedStreams = false

  /// A handler serving `router`'s methods under `configuration`; on shutdown, calls in
  /// progress get `gracePeriod` to finish. With a `refusal`, it answers the handshake with a
  /// GOAWAY carrying it and closes (see ``ServerConnectionStateMachine/init(configuration:refusal:)``).
  /// Its streams' pulls run through `pumps`, shared by the connections of its event loop (one
  /// of its own when `nil`). A client whose handshake has not arrived `handshakeTimeout` after
  /// the handler is added gets a GOAWAY, and the connection closes. Its lines about a peer that
  /// broke the protocol come out of `violationLog`, shared by the server's connections.
  init(
    router: RPCRouter, configuration: ServerConnectionStateMachine.Configuration, gracePeriod: TimeAmount,
    handshakeTimeout: TimeAmount? = nil, refusal: RPCError? = nil, pumps: PumpScheduler? = nil,
    logger: Logger = Logger(label: "pushline.rpc"), violationLog: LogBudget = LogBudget()
  ) {
    handshakeDeadline = handshakeTimeout.map(HandshakeDeadline.State.due) ?? .none
    var configuration = configuration
    configuration.pipelinedMethods = router.pipelinedMethods
    machine = ServerConnectionStateMachine(configuration: configuration, refusal: refusal)
    self.router = router
    self.gracePeriod = gracePeriod
    self.pumps = pumps
    self.logger = logger
    self.violationLog = violationLog
  }

  /// Whether `callID` is in progress. (`calls[callID] != nil` would copy the call out of the
  /// table — a retain and release of everything it holds — only to compare it with nil.)
  private func hasCall(_ callID: UInt32) -> Bool {
    calls.index(forKey: callID) != nil
  }

  /// What `callID` holds until its handler runs, if it is in progress and its handler has not.
  private func opening(of callID: UInt32) -> Opening? {
    guard let index = calls.index(forKey: callID), case .opening(let opening) = calls.values[index].receiver else { return nil }
    return opening
  }

  /// The pipeline of `callID`, if it is a pipelined call in progress.
  private func pipeline(of callID: UInt32) -> PipelinedCall? {
    guard let index = calls.index(forKey: callID), case .pipeline(let pipeline) = calls.values[index].receiver else { return nil }
    return pipeline
  }

  /// The connection's inbox for completing handlers' answers, made at its first use.
  private func answerInbox(on eventLoop: any EventLoop) -> AnswerInbox {
    if let inbox { return inbox }
    let inbox = AnswerInbox(connection: NIOLoopBound(self, eventLoop: eventLoop))
    self.inbox = inbox
    return inbox
  }

  // MARK: Channel events

  func handlerAdded(context: ChannelHandlerContext) {
    self.context = context
    channelIsWritable = context.channel.isWritable
    output = FlushCoalescer(context: context)
    executor = EventLoopTaskExecutor(context.eventLoop)
    if pumps == nil { pumps = PumpScheduler.pumps(on: context.eventLoop) }
    if case .due(let timeout) = handshakeDeadline {
      let callback = HandshakeDeadline(handler: self, timeout: timeout)
      handshakeDeadline = (try? context.eventLoop.assumeIsolated().scheduleCallback(in: timeout, handler: callback)).map(HandshakeDeadline.State.pending) ?? .none
    }
  }

  /// The handshake deadline's callback.
  private struct HandshakeDeadline: NIOScheduledCallbackHandler {
    /// Where a connection's deadline stands.
    enum State {
      case none
      /// Set, to start when the handler is added.
      case due(TimeAmount)
      case pending(NIOScheduledCallback)

      /// Cancels a pending deadline.
      mutating func cancel() {
        if case .pending(let callback) = self { callback.cancel() }
        self = .none
      }
    }

    let handler: ServerConnectionHandler
    let timeout: TimeAmount

    func handleScheduledCallback(eventLoop: some EventLoop) {
      guard handler.context != nil else { return }
      handler.handshakeDeadline = .none
      handler.execute(handler.machine.handshakeTimedOut(after: .nanoseconds(timeout.nanoseconds)))
    }
  }

  func handlerRemoved(context: ChannelHandlerContext) {
    connectionEnded()
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    output?.readStarted()
    let element = unwrapInboundIn(data)
    var actions = burstActions
    burstActions = []  // taken while in use: a reentrant read would start an array of its own
    machine.received(element, serverTimeMillis: WallClock.systemMillis(), into: &actions)
    if case .pending = handshakeDeadline, !machine.awaitsHandshake { handshakeDeadline.cancel() }
    execute(actions)
    actions.removeAll(keepingCapacity: true)
    burstActions = actions
  }

  func channelReadComplete(context: ChannelHandlerContext) {
    burstActions = []  // an idle connection keeps no array
    output?.readCompleted()
    context.fireChannelReadComplete()
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    guard let violation = error as? ProtocolViolation else {
      logger.debug("closing a connection after an error", metadata: ["peer": "\(peerDescription)", "error": "\(error)"])
      context.close(promise: nil)
      return
    }
    execute(machine.receivedViolation(violation))
  }

  func channelInactive(context: ChannelHandlerContext) {
    connectionEnded()
    context.fireChannelInactive()
  }

  func channelWritabilityChanged(context: ChannelHandlerContext) {
    channelIsWritable = context.channel.isWritable
    if channelIsWritable { resumeWriters() }
    context.fireChannelWritabilityChanged()
  }

  func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
    if let event = event as? ShutDown {
      execute(machine.shutDown(retryAfterMillis: event.retryAfterMillis))
      retire(
        context: context, endingLateCallsWith: RPCError(code: .unavailable, message: "the server has shut down"),
        retryAfterMillis: event.retryAfterMillis)
    } else if let event = event as? ChannelEvent, event == .inputClosed {
      peerFinishedSending()
      let late = RPCError(code: .cancelled, message: "the client finished sending, and the call did not end within the grace period")
      retire(context: context, endingLateCallsWith: late)
    } else {
      context.fireUserInboundEventTriggered(event)
    }
  }

  /// The peer's end of file (the channel allows half-closure): its unary and pipelined calls
  /// are answered as far as it sent them before the connection closes — a client may send its
  /// calls and shut its side down, even in the read that brings them. Its streams end at once:
  /// a client that stopped sending cannot be told from one that is gone, and a gone client's
  /// stream (a subscription) would otherwise hold on for the grace period.
  private func peerFinishedSending() {
    execute(machine.peerFinishedSending())
    let gone = RPCError(code: .cancelled, message: "the client finished sending before the stream ended").status
    for (callID, call) in calls where call.isStream {
      stopHandler(of: callID)
      finish(callID: callID, status: gone)
    }
  }

  /// Lets the calls in progress end, on a shutdown or once the peer has finished sending: each
  /// pumped stream hears that its connection is going away, a pipelined call takes no more
  /// requests (it ends once those it has are answered), and after the grace period what is
  /// still open ends with `late`. Once only; not on a connection already closed. A pipelined
  /// call's UNAVAILABLE carries `retryAfterMillis`, its GOAWAY's hint (none when the peer
  /// finished sending).
  private func retire(context: ChannelHandlerContext, endingLateCallsWith late: RPCError, retryAfterMillis: UInt32? = nil) {
    guard self.context != nil, graceTimer == nil else { return }
    isGoingAway = true
    for call in calls.values { call.pump?.connectionIsGoingAway() }
    let goingAway = RPCError(
      code: .unavailable, message: "the server is going away; retry on a new connection", retryAfterMillis: retryAfterMillis
    ).status
    for (callID, call) in calls {
      guard case .pipeline(let pipeline) = call.receiver else { continue }
      pipeline.end(with: goingAway) { carryOut($0, of: callID) }
    }
    let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
    graceTimer = context.eventLoop.scheduleTask(in: gracePeriod) { handler.value.gracePeriodEnded(endingCallsWith: late.status) }
  }

  // MARK: Input from the calls' handlers (on the event loop)

  /// Writes a response message of `callID` (already compressed if `compressed`).
  func send(_ message: [UInt8], compressed: Bool, callID: UInt32) -> SendOutcome {
    guard let output else { return .callOver }
    guard machine.write(message, compressed: compressed, callID: callID, to: { output.write($0) }) else { return .callOver }
    guard !channelIsWritable else { return .sent }
    output.flush()
    return channelIsWritable ? .sentAndFlushed : .sentMustWait
  }

  /// Resumes `writer` once the channel is writable, or throws CANCELLED when the call ends first.
  func waitUntilWritable(callID: UInt32, _ writer: CheckedContinuation<Void, any Error>) {
    guard context != nil, hasCall(callID) else { return writer.resume(throwing: CallResponder.callOver) }
    guard !channelIsWritable else { return writer.resume() }
    calls.changeValue(forKey: callID) { $0.writer = writer }
  }

  /// Whether the channel takes more bytes now.
  var isWritable: Bool { context != nil && channelIsWritable }

  /// Wakes `pump` once the channel is writable again (at once if it already is).
  func wakeWhenWritable(callID: UInt32, _ pump: CallPump) {
    guard context != nil, hasCall(callID) else { return }
    guard !channelIsWritable else { return pump.wake() }
    calls.changeValue(forKey: callID) { $0.pumpAwaitsWritable = true }
  }

  /// Makes `pump` the stream of `callID` until the call ends; it hears of the shutdown's
  /// GOAWAY (at once if it has gone out already), and of the call's end (at once if the call is
  /// already over).
  func register(_ pump: CallPump, callID: UInt32) {
    guard hasCall(callID) else { return pump.streamEnded() }
    calls[callID]?.pump?.streamEnded()  // a handler that pumps twice: the first stream is over
    calls.changeValue(forKey: callID) { $0.pump = pump }
    hasPumpedStreams = true
    if isGoingAway { pump.connectionIsGoingAway() }
  }

  /// Runs `writes` (answers given together) as one burst: one flush for all of them. What the
  /// connection's own streams have ready goes first, so that a connection that subscribes and
  /// publishes gets an update before the answer to the publish that made it, whichever of the
  /// two was scheduled first.
  func writeAnswers(_ writes: () -> Void) {
    guard let output else { return }
    output.burst {
      if hasPumpedStreams {
        for call in calls.values { call.pump?.pullIfReady() }
      }
      writes()
    }
  }

  /// The status of a call whose response the peer would refuse for its size: the server never
  /// sends a message over the limit the handshake agreed (docs/PROTOCOL.md 2.5).
  static func oversized(_ size: Int, limit: Int) -> RPCError {
    RPCError(code: .resourceExhausted, message: "a response of \(size) bytes, over this connection's \(limit)-byte message limit")
  }

  /// How responses are compressed on a connection that agreed on deflate.
  private static let deflate = ResponseBatch.Compression(threshold: Deflate.threshold, compress: Deflate.compress)

  /// Has `fill` append responses of `callID` (a pump's pull) straight to the connection's
  /// outgoing frames, written as one burst: one flush for all of them — and for the call's
  /// STATUS, when `fill` ends the stream. Nothing is written when `fill` throws; `nil` when it
  /// appends nothing and the stream goes on.
  ///
  /// `fill` runs with the connection's outgoing frames in use: it must not write to the
  /// connection itself.
  func writeResponses(
    callID: UInt32, compresses: Bool, _ fill: (inout ResponseBatch) throws(RPCError) -> Void
  ) throws(RPCError) -> SendOutcome? {
    guard let output, let maxFrameSize = machine.maxFrameSize(forResponsesTo: callID) else { return .callOver }
    let maxMessageSize = peer?.limits.maxMessageSize ?? ConnectionLimits.defaults.maxMessageSize
    let compression = compresses ? Self.deflate : nil
    var filled: Result<(wrote: Bool, endsStream: Bool), RPCError> = .success((false, false))
    output.burst {
      filled = Result { () throws(RPCError) in
        try output.writeEncoded { frames throws(RPCError) in
          let count = frames.count
          var batch = ResponseBatch(
            callID: callID, maxFrameSize: maxFrameSize, maxMessageSize: maxMessageSize, compression: compression, appendingTo: &frames)
          defer { frames = batch.frames }
          try fill(&batch)
          if let size = batch.oversizedResponseSize { throw Self.oversized(size, limit: maxMessageSize) }
          return (batch.frames.count > count, batch.endsStream)
        }
      }
      if case .success((_, endsStream: true)) = filled { finish(callID: callID, status: CallStatus(code: StatusCode.ok.rawValue)) }
    }
    let (wrote, endsStream) = try filled.get()
    if wrote { machine.responsesWritten() }
    guard !endsStream else { return .callOver }
    guard wrote else { return nil }
    guard !channelIsWritable else { return .sent }
    output.flush()
    return channelIsWritable ? .sentAndFlushed : .sentMustWait
  }

  /// A completing handler's answer to request `requestIndex` of `callID`: its response and
  /// status OK, or its error's status — on a pipelined call, in request order, and the status
  /// once the call is done (``PipelinedCall``); RESOURCE_EXHAUSTED in place of a response
  /// larger than the peer takes. Dropped when the call is over.
  func answer(callID: UInt32, requestIndex: UInt32, with result: Result<[UInt8], RPCError>) {
    guard hasCall(callID) else { return }
    var result = result
    if case .success(let response) = result, let limit = peer?.limits.maxMessageSize, response.count > limit {
      result = .failure(Self.oversized(response.count, limit: limit))
    }
    if let pipeline = pipeline(of: callID) {
      return pipeline.answer(requestIndex, with: result) { carryOut($0, of: callID) }
    }
    switch result {
    case .success(let response):
      carryOut(.response(response), of: callID)
      finish(callID: callID, status: CallStatus(code: StatusCode.ok.rawValue))
    case .failure(let error):
      finish(callID: callID, status: error.status)
    }
  }

  /// A request of the pipelined call `callID` failed with `status`: the requests after it go
  /// to no handler. (Its answer, on its way, ends the call in its turn.)
  func stopTakingRequests(of callID: UInt32, after requestIndex: UInt32, status: CallStatus) {
    pipeline(of: callID)?.stopTakingRequests(after: requestIndex, status: status)
  }

  /// Sends a response of `callID`, or ends the call.
  private func carryOut(_ output: PipelinedCall.Output, of callID: UInt32) {
    switch output {
    case .response(let response):
      let (bytes, compressed) = Deflate.prepare(response, negotiated: peer?.compression == .deflate)
      _ = send(bytes, compressed: compressed, callID: callID)
    case .end(let status):
      finish(callID: callID, status: status)
    }
  }

  /// A call's handler returned with `status`: that ends the call, unless the handler handed
  /// the stream to a pump and returned OK — the pump then ends the call when its source does.
  /// A unary handler's return lets the next waiting call start (``maxRunningTasks``).
  func handlerReturned(callID: UInt32, status: CallStatus, wasUnary: Bool) {
    if wasUnary {
      runningTasks -= 1
      startDeferredCalls()
    }
    guard status.code == StatusCode.ok.rawValue, calls[callID]?.pump != nil else { return finish(callID: callID, status: status) }
    calls.changeValue(forKey: callID) { $0.task = nil }  // the finished task's memory goes; the stream lives on in its pump
  }

  /// Sends the status that ends the call.
  func finish(callID: UInt32, status: CallStatus) {
    let call = calls.removeValue(forKey: callID)
    call?.deadline?.cancel()
    if let (frame, closes) = machine.endCall(callID: callID, status: status) {
      if closes {
        output?.close(after: [.frame(frame)])
      } else {
        output?.write(.frame(frame))
      }
    }
    call?.pump?.streamEnded()
  }

  // MARK: Actions

  private func execute(_ actions: [ServerConnectionStateMachine.Action]) {
    for action in actions {
      switch action {
      case .write(let elements):
        for element in elements { output?.write(element) }
      case .connectionReady(let ready):
        peer = ready
      case .startCall(let callID, let start):
        startCall(callID, start)
      case .deliverMessage(let callID, let payload, let compressed):
        deliver(payload, compressed: compressed, callID: callID)
      case .deliverEndOfRequests(let callID):
        runHandler(of: callID)
      case .cancelCall(let callID):
        if hasCall(callID) { stopHandler(of: callID) }
        calls.removeValue(forKey: callID)?.pump?.streamEnded()
      case .pongReceived:
        break
      case .close(let elements):
        logClosing(after: elements)
        output?.close(after: elements)
      }
    }
  }

  /// Logs why the connection closes, as its GOAWAY among `elements` says: at `notice` when
  /// the peer broke the protocol, at `debug` when the server refused or retired it (past the
  /// accept rate, no handshake in time, shutdown), which a reconnect storm does by thousands.
  /// The lines at `notice` come out of the server's ``LogBudget``: the first logged after some
  /// were dropped says how many (`suppressed`).
  private func logClosing(after elements: [ConnectionElement]) {
    for case .frame(let frame) in elements where frame.kind == .goAway {
      guard let goAway = try? GoAway(serializedBytes: frame.payload) else { continue }
      // The message and metadata are built only if the level is logged.
      let metadata: () -> Logger.Metadata = {
        ["peer": "\(self.peerDescription)", "code": "\(goAway.code ?? 0)", "reason": "\(goAway.message ?? "")"]
      }
      guard goAway.code != StatusCode.unavailable.rawValue && goAway.retryAfterMillis == nil else {
        logger.debug("closing a connection", metadata: metadata())
        continue
      }
      guard logger.logLevel <= .notice, let suppressed = violationLog.take(at: context?.eventLoop.now ?? .now()) else { continue }
      var lineMetadata = metadata()
      if suppressed > 0 { lineMetadata["suppressed"] = "\(suppressed)" }
      logger.notice("closing a connection that broke the protocol", metadata: lineMetadata)
    }
  }

  /// The peer's address as logs name it.
  private var peerDescription: String { context?.remoteAddress.map { "\($0)" } ?? "?" }

  private func startCall(_ callID: UInt32, _ start: CallStart) {
    guard let peer, let context else { return }
    guard let (kind, implementation) = router.handler(for: start.method) else {
      return finish(callID: callID, status: RPCError(code: .unimplemented, message: "no method \(start.method)").status)
    }
    let serverContext = ServerContext(peer: peer, start: start, executor: executor)
    var call = Call()
    call.isStream = kind == .serverStreaming
    if case .pipelined(let handler) = implementation {
      call.receiver = .pipeline(PipelinedCall(context: serverContext, handler: handler))
    } else {
      call.receiver = .opening(Opening(context: serverContext, implementation: implementation, isUnary: kind == .unary))
    }
    if let timeout = serverContext.timeout {
      // The deadline runs from the call's start, whatever the handler is doing.
      let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
      call.deadline = context.eventLoop.scheduleTask(in: TimeAmount(timeout)) { handler.value.deadlinePassed(callID: callID) }
    }
    calls[callID] = call
  }

  /// Hands a request to its call: a pipelined call's handler takes it at once; any other call
  /// holds it, as it came, until the client half-closes.
  private func deliver(_ payload: ArraySlice<UInt8>, compressed: Bool, callID: UInt32) {
    guard let index = calls.index(forKey: callID), let receiver = calls.values[index].receiver, let context else { return }
    switch receiver {
    case .opening(let opening):
      opening.request = (payload, compressed)
    case .pipeline(let pipeline):
      // Once the call is ending, a request goes to no handler and gets no answer.
      guard let requestIndex = pipeline.numberNextRequest() else { return }
      switch inflated(payload, compressed: compressed) {
      case .success(let request):
        let answer = CallAnswer(inbox: answerInbox(on: context.eventLoop), callID: callID, requestIndex: requestIndex)
        pipeline.handler(request, pipeline.context, answer)
      case .failure(let error):
        pipeline.answer(requestIndex, with: .failure(error)) { carryOut($0, of: callID) }
      }
    }
  }

  /// A request's bytes, inflated if they came deflated (within the agreed message size).
  private func inflated(_ payload: ArraySlice<UInt8>, compressed: Bool) -> Result<ArraySlice<UInt8>, RPCError> {
    guard compressed, let peer else { return .success(payload) }
    return Result { () throws(RPCError) in try Deflate.decompress(payload, limit: peer.limits.maxMessageSize)[...] }
  }

  private func runHandler(of callID: UInt32) {
    if let pipeline = pipeline(of: callID) {
      return pipeline.end(with: CallStatus(code: StatusCode.ok.rawValue)) { carryOut($0, of: callID) }
    }
    guard let opening = opening(of: callID) else { return }
    guard deferredStarts == nil, canStart(opening) else {
      if deferredStarts == nil { deferredStarts = CircularBuffer() }
      deferredStarts?.append(callID)  // in place
      return
    }
    start(callID, opening)
  }

  /// Whether `opening`'s handler may run now: the channel takes writes, and a unary task has
  /// a free slot.
  private func canStart(_ opening: Opening) -> Bool {
    guard channelIsWritable else { return false }
    guard case .task = opening.implementation, opening.isUnary else { return true }
    return runningTasks < Self.maxRunningTasks
  }

  /// Runs the handlers that waited to start, in order, as far as the channel's writability and
  /// the running tasks allow (each start may use them up again).
  private func startDeferredCalls() {
    while let callID = deferredStarts?.first {
      guard let opening = opening(of: callID) else {  // cancelled, past its deadline, or ended
        deferredStarts?.removeFirst()
        continue
      }
      guard canStart(opening) else { return }
      deferredStarts?.removeFirst()
      start(callID, opening)
    }
    deferredStarts = nil
  }

  /// Runs the handler of `callID` (`opening`) on its request.
  private func start(_ callID: UInt32, _ opening: Opening) {
    guard let context, let executor, let pumps else { return }
    calls.changeValue(forKey: callID) { $0.receiver = nil }
    machine.requestTaken(callID: callID)
    guard let (bytes, isCompressed) = opening.request else {
      let refusal = RPCError(code: .invalidArgument, message: "the method takes one request, got none")
      return finish(callID: callID, status: refusal.status)
    }
    let request: ArraySlice<UInt8>
    switch inflated(bytes, compressed: isCompressed) {
    case .success(let inflated): request = inflated
    case .failure(let error): return finish(callID: callID, status: error.status)
    }
    let serverContext = opening.context
    let handler: RPCRouter.Handler
    switch opening.implementation {
    case .completing(let completing):
      return completing(request, serverContext, CallAnswer(inbox: answerInbox(on: context.eventLoop), callID: callID))
    case .task(let taskHandler):
      handler = taskHandler
    case .pipelined:
      return  // pipelined calls have no opening
    }
    let responder = CallResponder(
      connection: NIOLoopBound(self, eventLoop: context.eventLoop), callID: callID,
      compresses: serverContext.peer.compression == .deflate, maxMessageSize: serverContext.peer.limits.maxMessageSize, pumps: pumps)
    if opening.isUnary { runningTasks += 1 }
    output?.flushAfterStartedTasks()
    let isUnary = opening.isUnary
    let task = Task(executorPreference: executor) {
      let status: CallStatus
      do {
        try await handler(request, RPCRouter.ResponseSink(send: responder.send, pump: responder.pump), serverContext)
        status = CallStatus(code: StatusCode.ok.rawValue)
      } catch {
        status = (error as? RPCError ?? RPCError(code: .unknown, message: "\(error)")).status
      }
      responder.handlerReturned(status: status, wasUnary: isUnary)
    }
    calls.changeValue(forKey: callID) { $0.task = task }
  }

  private func deadlinePassed(callID: UInt32) {
    guard hasCall(callID) else { return }
    stopHandler(of: callID)
    finish(callID: callID, status: RPCError(code: .deadlineExceeded, message: "the call's deadline passed").status)
  }

  /// Cancels a call's handler and its deadline, and fails a write it is waiting on; the call
  /// stays registered until it is finished or removed.
  private func stopHandler(of callID: UInt32) {
    guard let call = calls[callID] else { return }
    call.task?.cancel()
    call.deadline?.cancel()
    calls.changeValue(forKey: callID) { call in
      call.writer = nil
      call.pumpAwaitsWritable = false
    }
    call.writer?.resume(throwing: CallResponder.callOver)
  }

  /// The grace period of a shutdown, or of a peer that finished sending, is over: handlers
  /// still running are cancelled (their calls end when they return), and every other call still
  /// open — a pumped stream, a completing handler's unanswered call, a request still arriving —
  /// ends with `status`. Handlers that have not returned ``forcedCloseMargin`` later are given
  /// up on: the connection closes without their statuses.
  private func gracePeriodEnded(endingCallsWith status: CallStatus) {
    for (callID, call) in calls {
      stopHandler(of: callID)
      if call.pump != nil || call.task == nil { finish(callID: callID, status: status) }
    }
    guard !calls.isEmpty, let context else { return }
    let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
    forcedClose = context.eventLoop.scheduleTask(in: Self.forcedCloseMargin) { handler.value.closeDespiteRunningHandlers() }
  }

  /// Closes the connection although handlers cancelled at the end of the grace period still
  /// run: they ignore their cancellation.
  private func closeDespiteRunningHandlers() {
    guard let context, !calls.isEmpty else { return }
    logger.notice(
      "closing a connection whose handlers ignored their cancellation",
      metadata: ["peer": "\(peerDescription)", "calls": "\(calls.count)"])
    context.close(promise: nil)
  }

  /// The channel is writable again: every waiting writer and pump goes on.
  private func resumeWriters() {
    for (callID, call) in calls where call.writer != nil || call.pumpAwaitsWritable {
      calls.changeValue(forKey: callID) { call in
        call.writer = nil
        call.pumpAwaitsWritable = false
      }
      call.writer?.resume()
      if call.pumpAwaitsWritable { call.pump?.wake() }
    }
    startDeferredCalls()
  }

  /// The channel closed or the handler left it: every handler still running is cancelled.
  private func connectionEnded() {
    guard context != nil else { return }
    context = nil
    output = nil
    inbox = nil  // it holds the handler: answers still on their way find the call gone
    graceTimer?.cancel()
    forcedClose?.cancel()
    handshakeDeadline.cancel()
    let ended = calls
    calls = [:]
    deferredStarts = nil
    for call in ended.values {
      call.task?.cancel()
      call.deadline?.cancel()
      call.writer?.resume(throwing: CallResponder.callOver)
      call.pump?.streamEnded()
    }
  }
}

@available(*, unavailable)
extension ServerConnectionHandler: Sendable {}
