public import PushlineSchema
import PushlineWire

/// The server side of one connection as a value: it takes what the peer sent and what the
/// call handlers did, and returns the actions to perform.
///
/// It does no I/O and keeps no clock: the transport executes the actions (writes, closes,
/// handler starts), and tests drive the machine directly. Its rules:
///
/// - The peer's preface, then its `ClientHello`; anything else first is a protocol violation.
///   The server answers with its own preface and a `ServerHello` (version, compression and
///   limits agreed, server time).
/// - Call ids strictly increase. A call beyond `maxConcurrentCalls` is refused with
///   RESOURCE_EXHAUSTED; a message larger than `maxMessageSize` ends its call the same way.
/// - Frames for calls that have already ended are ignored (they cross the end in flight);
///   frames for calls never started, malformed envelopes and out-of-place frame kinds are
///   violations: GOAWAY with INTERNAL, then close. Unknown frame kinds are ignored.
/// - PING is answered with PONG. More than `pingBudget` pings in a row with no call activity
///   in between, each within half the announced keepalive interval of the one before, is a
///   ping flood: GOAWAY with RESOURCE_EXHAUSTED, then close. A client keeping to the interval
///   on a quiet connection (an open stream with nothing to send) is not one.
/// - A connection made with a refusal (past the server's accept rate) gets, in answer to its
///   handshake, a GOAWAY with the refusal's status and retry-after hint, and is closed.
/// - ``shutDown(retryAfterMillis:)`` sends GOAWAY naming the last call still served, with a
///   retry-after hint; later calls are refused with UNAVAILABLE, and the connection closes when
///   the last call ends. Before the handshake, the GOAWAY (a refused connection's refusal)
///   answers in place of the ServerHello, and the connection closes.
public struct ServerConnectionStateMachine: Sendable {
  /// What the server accepts and offers.
  public struct Configuration: Hashable, Sendable {
    /// The server's own limits; the connection uses the smaller of these and the client's.
    public var limits: ConnectionLimits
    /// Compressions the server can use, in order of preference; identity is always possible.
    public var compressions: [Compression]
    /// How often an idle client should ping, announced in the handshake.
    public var keepaliveIntervalMillis: UInt32?
    /// Pings tolerated in a row without call activity before the peer is cut off.
    public var pingBudget: Int
    /// The request bytes a connection may make the server hold at once: messages still
    /// arriving frame by frame, and requests whose handlers have not started yet (not
    /// half-closed yet, or waiting for their turn: ``requestTaken(callID:)``). Each
    /// call may hold a message of the agreed size; this bounds them together, so that many
    /// concurrent calls cannot multiply the message limit. A frame that would pass it ends its
    /// call with RESOURCE_EXHAUSTED.
    public var maxBufferedRequestBytes: Int
    /// The methods whose calls take a stream of requests, each answered by one response (see
    /// ``RPCRouter/registerPipelined(_:request:response:completing:)``). Their requests go to
    /// the handler as they arrive, so they are not held; instead a connection's pipelined
    /// calls together may have at most `limits.maxConcurrentCalls` requests unanswered — as
    /// many as a client could have in flight as unary calls — and a request past that ends its
    /// call with RESOURCE_EXHAUSTED. Every other method takes one request. Transports fill
    /// this in from their router.
    public var pipelinedMethods: Set<String>

    /// A configuration; the defaults suit most servers.
    public init(
      limits: ConnectionLimits = .defaults, compressions: [Compression] = [.deflate],
      keepaliveIntervalMillis: UInt32? = 30_000, pingBudget: Int = 10, maxBufferedRequestBytes: Int = 16 << 20,
      pipelinedMethods: Set<String> = []
    ) {
      self.limits = limits
      self.compressions = compressions
      self.keepaliveIntervalMillis = keepaliveIntervalMillis
      self.pingBudget = pingBudget
      self.maxBufferedRequestBytes = maxBufferedRequestBytes
      self.pipelinedMethods = pipelinedMethods
    }
  }

  /// The client as its handshake described it: what call handlers see of the connection.
  public struct Peer: Hashable, Sendable {
    public var version: UInt32
    public var compression: Compression
    public var limits: ConnectionLimits
    public var authToken: String?
    public var metadata: [MetadataEntry]
    public var userAgent: String?
  }

  /// What the transport must do.
  public enum Action: Hashable, Sendable {
    /// Write these to the peer.
    case write([ConnectionElement])
    /// The handshake completed.
    case connectionReady(Peer)
    /// Run the handler of a new call.
    case startCall(callID: UInt32, CallStart)
    /// Give a request message to the call's handler.
    case deliverMessage(callID: UInt32, payload: ArraySlice<UInt8>, compressed: Bool)
    /// The client sent its last request message.
    case deliverEndOfRequests(callID: UInt32)
    /// Stop the call's handler; nothing more is sent on the call.
    case cancelCall(callID: UInt32)
    /// The peer answered a ping (keepalive).
    case pongReceived(payload: [UInt8])
    /// Write these, then close the connection.
    case close(after: [ConnectionElement])
  }

  /// Where a call in progress stands on the client's side: eight bytes, as every connection
  /// keeps one per call (a subscriber's for as long as it is connected).
  private struct CallProgress: Sendable {
    /// The call's requests.
    var requests: Requests
    /// The client has half-closed the call.
    var isHalfClosed = false
  }

  /// Where a call's requests stand.
  private enum Requests: Sendable {
    /// A call that takes one request, not held: it has not arrived, or it has gone to the
    /// handler at the HALF_CLOSE.
    case notHeld
    /// A call that takes one request, delivered before the HALF_CLOSE and held by the
    /// transport until then: its size.
    case held(bytes: UInt32)
    /// A pipelined call: its requests delivered and not answered yet.
    case pipelined(unanswered: UInt32)

    /// The bytes held for the call.
    var heldBytes: Int {
      if case .held(let bytes) = self { Int(bytes) } else { 0 }
    }
  }

  private struct Open: Sendable {
    /// The agreed limits and the compression of the responses: what the machine needs of the
    /// peer (the rest, such as the token, is the transport's, from ``Action/connectionReady(_:)``).
    var limits: ConnectionLimits
    var compression: Compression
    /// Calls in progress.
    var calls: [UInt32: CallProgress] = [:]
    var highestCallID: UInt32 = 0
    /// Set once a GOAWAY is sent or received: the last call id still served.
    var lastServedCallID: UInt32?
    /// The retry-after hint of the shutdown's GOAWAY, for the calls that cross it.
    var goAwayRetryAfterMillis: UInt32?
    var pingsWithoutActivity = 0
    /// When the last PING arrived, on the server's clock.
    var lastPingMillis: Int64 = .min
    var messages = MessageReassembly()
    /// The requests the calls hold until their handlers take them, together.
    var heldRequestBytes = 0
    /// The requests of the pipelined calls delivered and not answered yet, together.
    var unansweredRequests = 0
    /// The pipelined calls refused mid-way, with the status each ends with once the requests
    /// before the refusal are answered; their later frames are dropped.
    var refusals: [UInt32: CallStatus] = [:]

    /// The client half-closed `callID`. Its request stays counted until its handler takes it
    /// (``ServerConnectionStateMachine/requestTaken(callID:)``): a call may wait its turn to
    /// start (2.7), holding it.
    mutating func halfClose(_ callID: UInt32) {
      messages.discard(callID: callID)
      calls.changeValue(forKey: callID) { $0.isHalfClosed = true }
    }

    /// `callID`'s handler took its request: the call holds it no longer.
    mutating func takeRequest(of callID: UInt32) {
      calls.changeValue(forKey: callID) { call in
        heldRequestBytes -= call.requests.heldBytes
        if case .held = call.requests { call.requests = .notHeld }
      }
    }

    /// Ends `callID` on the client's side, with what it holds.
    mutating func removeCall(_ callID: UInt32) {
      messages.discard(callID: callID)
      if !refusals.isEmpty { refusals[callID] = nil }
      guard let requests = calls.removeValue(forKey: callID)?.requests else { return }
      heldRequestBytes -= requests.heldBytes
      if case .pipelined(let unanswered) = requests { unansweredRequests -= Int(unanswered) }
    }
  }

  private enum State: OpenPhaseState, Sendable {
    /// `updating`: the open connection's tables are out of `state`, being changed in place
    /// (see ``OpenPhaseState``).
    /// Before the handshake, with the refusal to answer it with, if any (kept in the state, not
    /// beside it: a case's payload no larger than the open phase's costs nothing).
    case awaitingPreface(refusal: RPCError?), awaitingHello(refusal: RPCError?)
    case open(Open), updating, closed

    var isOpen: Bool {
      if case .open = self { true } else { false }
    }

    consuming func intoOpenPhase() -> Open? {
      if case .open(let open) = consume self { open } else { nil }
    }

    var isUpdating: Bool {
      if case .updating = self { true } else { false }
    }
  }

  /// The highest protocol version this implementation speaks.
  public static let highestVersion: UInt32 = UInt32(ConnectionPreface.currentVersion)
  /// The largest `ClientHello` a server accepts, in bytes, its metadata counted as HTTP/2
  /// counts headers (``Swift/Array/accountedSize``): tokens and metadata are a few hundred
  /// bytes, and the connection keeps them as long as it lives.
  public static let maxClientHelloSize = 16 << 10
  /// The largest `CallStart` a server accepts, in bytes, its metadata counted as HTTP/2 counts
  /// headers (``Swift/Array/accountedSize``): a method and a few entries take a few hundred,
  /// and the call keeps them as long as it lives.
  public static let maxCallStartSize = 16 << 10
  /// The smallest maximum frame size a server accepts from a client, in bytes.
  public static let minFrameSize = 16 << 10

  private let configuration: Configuration
  private var state: State

  /// A machine for a new connection; with a `refusal` (the server is past its accept rate),
  /// one that answers the client's handshake with a GOAWAY carrying the refusal's status and
  /// retry-after hint, then closes — read first, so the client is sure to see why.
  public init(configuration: Configuration = Configuration(), refusal: RPCError? = nil) {
    self.configuration = configuration
    state = .awaitingPreface(refusal: refusal)
  }

  /// Whether the connection has closed or is closing.
  public var isClosed: Bool {
    if case .closed = state { true } else { false }
  }

  /// Whether the client's preface and handshake have yet to arrive.
  public var awaitsHandshake: Bool {
    switch state {
    case .awaitingPreface, .awaitingHello: true
    case .open, .updating, .closed: false
    }
  }

  /// The client did not complete its handshake within `timeout` (the server's handshake
  /// deadline): unless it has meanwhile, a GOAWAY and close — the refusal's GOAWAY on a
  /// connection refused past the accept rate, so that its client still learns when to come
  /// back; UNAVAILABLE otherwise. Without a deadline, a peer sending nothing but frames of
  /// unknown kinds (which the handshake skips) would hold a connection, a refused one
  /// included, for as long as it liked.
  public mutating func handshakeTimedOut(after timeout: Duration) -> [Action] {
    switch state {
    case .awaitingPreface(let refusal), .awaitingHello(let refusal):
      if let refusal { return refuse(refusal) }
      return violation(.unavailable, "no handshake within \(timeout.milliseconds) ms", sendPreface: true)
    case .open, .updating, .closed:
      return []
    }
  }

  // MARK: Input from the peer

  /// Handles a preface or frame from the peer; `serverTimeMillis` goes into the handshake (and is
  /// read only then: the clock is not consulted for every frame).
  public mutating func received(_ element: ConnectionElement, serverTimeMillis: @autoclosure () -> Int64) -> [Action] {
    var actions: [Action] = []
    received(element, serverTimeMillis: serverTimeMillis(), into: &actions)
    return actions
  }

  /// What ``received(_:serverTimeMillis:)`` does, appending the actions to `actions`: for a
  /// transport that reads many frames in a burst and reuses one array for their actions,
  /// rather than allocate one per frame.
  public mutating func received(
    _ element: ConnectionElement, serverTimeMillis: @autoclosure () -> Int64, into actions: inout [Action]
  ) {
    switch element {
    case .message, .encodedFrames:
      for frame in element.frames { received(.frame(frame), serverTimeMillis: serverTimeMillis(), into: &actions) }
      return
    case .preface, .frame:
      break
    }
    // The common case first, outside the switch: a switch over `(state, element)` would hold a
    // copy of the open state, and changing it in place would then copy its tables.
    if case .open = state, case .frame(let frame) = element {
      guard var open = state.takeOpen() else { return }
      received(frame, open: &open, serverTimeMillis: serverTimeMillis(), into: &actions)
      state.restore(consume open)
      return
    }
    actions += receivedOutsideTheOpenPhase(element, serverTimeMillis: serverTimeMillis())
  }

  /// Everything but a frame on an open connection: the preface and the handshake, a second
  /// preface, and whatever arrives once the connection is closed.
  private mutating func receivedOutsideTheOpenPhase(
    _ element: ConnectionElement, serverTimeMillis: @autoclosure () -> Int64
  ) -> [Action] {
    switch (state, element) {
    case (.closed, _), (.updating, _):
      return []
    case (.awaitingPreface(let refusal), .preface(let preface)):
      guard preface.version >= 1 else { return violation(.failedPrecondition, "protocol version 0", sendPreface: true) }
      state = .awaitingHello(refusal: refusal)
      return []
    case (.awaitingPreface, .frame), (.awaitingPreface, .message), (.awaitingPreface, .encodedFrames):
      return violation(.internal, "a frame before the preface", sendPreface: true)
    case (.awaitingHello(let refusal), .frame(let frame)) where frame.kind == .handshake:
      return handshake(frame, refusal: refusal, serverTimeMillis: serverTimeMillis())
    case (.awaitingHello, .frame(let frame)) where !frame.kind.isKnown:
      return []
    case (.awaitingHello, _):
      return violation(.internal, "expected the client's handshake", sendPreface: true)
    case (.open(let open), .preface):
      return violation(.internal, "a second preface", open: open)
    case (.open, .frame), (.open, .message), (.open, .encodedFrames):
      return []  // handled above
    }
  }

  /// The decoder found the peer's bytes malformed: answer with GOAWAY and close.
  public mutating func receivedViolation(_ violation: ProtocolViolation) -> [Action] {
    guard !isClosed else { return [] }
    if case .open(let open) = state { return self.violation(.internal, violation.description, open: open) }
    return self.violation(.internal, violation.description, sendPreface: true)
  }

  private mutating func handshake(_ frame: Frame, refusal: RPCError?, serverTimeMillis: Int64) -> [Action] {
    if let refusal { return refuse(refusal) }
    // Held for the connection's life (its token and metadata), so bounded before anything.
    guard frame.payload.count <= Self.maxClientHelloSize else {
      return violation(
        .resourceExhausted, "a ClientHello of \(frame.payload.count) bytes, limit \(Self.maxClientHelloSize)", sendPreface: true)
    }
    guard frame.callID == 0, let hello = try? ClientHello(serializedBytes: frame.payload) else {
      return violation(.internal, "malformed ClientHello", sendPreface: true)
    }
    guard hello.metadata.accountedSize <= Self.maxClientHelloSize else {
      return violation(
        .resourceExhausted, "connection metadata of \(hello.metadata.accountedSize) bytes (32 counted per entry), limit \(Self.maxClientHelloSize)",
        sendPreface: true)
    }
    let version = min(hello.maxVersion, Self.highestVersion)
    guard version >= hello.minVersion, version >= 1 else {
      return violation(
        .failedPrecondition, "no common protocol version (client \(hello.minVersion)–\(hello.maxVersion), server 1–\(Self.highestVersion))",
        sendPreface: true)
    }
    let compression = hello.compressions.first { configuration.compressions.contains($0) } ?? .identity
    let limits = configuration.limits.agreed(with: hello.limits)
    // Smaller frames would cut every response into pieces of a few bytes, each with its header.
    guard limits.maxFrameSize >= Self.minFrameSize else {
      return violation(
        .failedPrecondition, "a maximum frame size of \(limits.maxFrameSize) bytes, below the \(Self.minFrameSize) a server requires",
        sendPreface: true)
    }
    let peer = Peer(
      version: version, compression: compression, limits: limits, authToken: hello.authToken,
      metadata: hello.metadata, userAgent: hello.userAgent)
    var answer = ServerHello(version: version)
    answer.compression = compression
    answer.limits = configuration.limits.announced
    answer.serverTimeMillis = serverTimeMillis
    answer.keepaliveIntervalMillis = configuration.keepaliveIntervalMillis
    state = .open(Open(limits: limits, compression: compression))
    return [
      .write([.preface(ConnectionPreface()), .frame(Frame(kind: .handshake, callID: 0, payload: answer.serializedBytes()))]),
      .connectionReady(peer),
    ]
  }

  private mutating func received(
    _ frame: Frame, open: inout Open, serverTimeMillis: @autoclosure () -> Int64, into actions: inout [Action]
  ) {
    switch frame.kind {
    case .callStart:
      startCall(frame, open: &open, into: &actions)
    case .message, .halfClose, .cancel:
      callFrame(frame, open: &open, into: &actions)
    case .ping:
      guard frame.callID == 0, frame.payload.count == 8 else { return actions += violation(.internal, "malformed PING", open: open) }
      // A PING at least half the keepalive interval after the last is keepalive, not a flood;
      // so is one whose clock went back (the wall clock was set back).
      let now = serverTimeMillis()
      if let interval = configuration.keepaliveIntervalMillis, now < open.lastPingMillis || open.lastPingMillis <= now - Int64(interval / 2) {
        open.pingsWithoutActivity = 0
      }
      open.lastPingMillis = now
      open.pingsWithoutActivity += 1
      guard open.pingsWithoutActivity <= configuration.pingBudget else {
        return actions += violation(.resourceExhausted, "too many pings", open: open)
      }
      actions.append(.write([.frame(Frame(kind: .pong, callID: 0, payload: frame.payload))]))
    case .pong:
      actions.append(.pongReceived(payload: frame.payload))
    case .goAway:
      // The client starts no more calls; close once those in progress end.
      open.lastServedCallID = open.highestCallID
      actions += closeIfDrained(open, after: [])
    case .handshake, .status:
      actions += violation(.internal, "a client may not send \(frame.kind) here", open: open)
    default:
      break  // Unknown kinds are ignored, for forward compatibility.
    }
  }

  private mutating func startCall(_ frame: Frame, open: inout Open, into actions: inout [Action]) {
    guard frame.callID > open.highestCallID else {
      return actions += violation(.internal, "call id \(frame.callID) does not increase (last \(open.highestCallID))", open: open)
    }
    // Kept for the call's life (its method and metadata), so bounded before it is decoded.
    guard frame.payload.count <= Self.maxCallStartSize else {
      open.highestCallID = frame.callID
      let refusal = "a CallStart of \(frame.payload.count) bytes, limit \(Self.maxCallStartSize)"
      return actions += [.write([Self.status(frame.callID, .resourceExhausted, refusal)])]
    }
    guard let start = try? CallStart(serializedBytes: frame.payload) else {
      return actions += violation(.internal, "malformed CallStart on call \(frame.callID)", open: open)
    }
    open.highestCallID = frame.callID
    open.pingsWithoutActivity = 0
    guard start.metadata.accountedSize <= Self.maxCallStartSize else {
      let refusal = "call metadata of \(start.metadata.accountedSize) bytes (32 counted per entry), limit \(Self.maxCallStartSize)"
      return actions += [.write([Self.status(frame.callID, .resourceExhausted, refusal)])]
    }
    if let last = open.lastServedCallID, frame.callID > last {
      let status = Self.status(
        frame.callID, .unavailable, "the server is going away; retry on a new connection", retryAfterMillis: open.goAwayRetryAfterMillis)
      return actions += [.write([status])]
    }
    guard open.calls.count < open.limits.maxConcurrentCalls else {
      return actions += [.write([Self.status(frame.callID, .resourceExhausted, "more than \(open.limits.maxConcurrentCalls) concurrent calls")])]
    }
    open.calls[frame.callID] = CallProgress(requests: configuration.pipelinedMethods.contains(start.method) ? .pipelined(unanswered: 0) : .notHeld)
    actions.append(.startCall(callID: frame.callID, start))
  }

  private mutating func callFrame(_ frame: Frame, open: inout Open, into actions: inout [Action]) {
    guard let progress = open.calls[frame.callID] else {
      // A call that has ended: the frame crossed its end in flight. One never started: a violation.
      guard frame.callID <= open.highestCallID && frame.callID != 0 else {
        return actions += violation(.internal, "\(frame.kind) for call \(frame.callID), which was never started", open: open)
      }
      return
    }
    open.pingsWithoutActivity = 0
    // A pipelined call refused mid-way takes nothing more; the client may still cancel it.
    guard open.refusals.isEmpty || open.refusals[frame.callID] == nil || frame.kind == .cancel else { return }
    switch frame.kind {
    case .cancel:
      open.removeCall(frame.callID)
      actions.append(.cancelCall(callID: frame.callID))
      actions += closeIfDrained(open, after: [])
    case .halfClose:
      guard !open.messages.isUnfinished(callID: frame.callID) else {
        return actions += refuse(frame.callID, .internal, "HALF_CLOSE in the middle of a message", open: &open)
      }
      open.halfClose(frame.callID)
      actions.append(.deliverEndOfRequests(callID: frame.callID))
    default:
      guard !progress.isHalfClosed else { return actions += refuse(frame.callID, .internal, "a message after the end of the requests", open: &open) }
      // A method that is not pipelined takes one request: a second one is refused as it
      // arrives, not held until the call's end.
      switch progress.requests {
      case .notHeld:
        break
      case .held:
        return actions += refuse(frame.callID, .invalidArgument, "the method takes one request, got more", open: &open)
      case .pipelined:
        let maxUnanswered = open.limits.maxConcurrentCalls
        guard open.unansweredRequests < maxUnanswered else {
          return actions += refuse(
            frame.callID, .resourceExhausted, "more than \(maxUnanswered) requests unanswered on this connection's pipelined calls",
            open: &open)
        }
      }
      let buffered = open.heldRequestBytes + open.messages.bufferedBytes(adding: frame)
      guard buffered <= configuration.maxBufferedRequestBytes else {
        return actions += refuse(
          frame.callID, .resourceExhausted,
          "requests not yet ended would hold \(buffered) bytes on this connection, limit \(configuration.maxBufferedRequestBytes)",
          open: &open)
      }
      switch open.messages.receive(frame, limit: open.limits.maxMessageSize) {
      case .incomplete:
        return
      case .malformed:
        return actions += violation(.internal, "MESSAGE on call \(frame.callID) without a valid compressed flag", open: open)
      case .tooLarge(let bytes):
        return actions += refuse(frame.callID, .resourceExhausted, "a message of \(bytes) bytes, limit \(open.limits.maxMessageSize)", open: &open)
      case .complete(let flag, let message):
        guard flag <= 1 else { return actions += violation(.internal, "MESSAGE on call \(frame.callID) without a valid compressed flag", open: open) }
        guard flag == 0 || open.compression != .identity else {
          return actions += refuse(frame.callID, .internal, "a compressed message on a connection without compression", open: &open)
        }
        if case .pipelined(let unanswered) = progress.requests {
          // Handed to the handler at once: the request is not held, it awaits its answer.
          open.calls.changeValue(forKey: frame.callID) { $0.requests = .pipelined(unanswered: unanswered + 1) }
          open.unansweredRequests += 1
        } else {
          open.calls.changeValue(forKey: frame.callID) { $0.requests = .held(bytes: UInt32(clamping: message.count)) }
          open.heldRequestBytes += message.count
        }
        actions.append(.deliverMessage(callID: frame.callID, payload: message, compressed: flag == 1))
      }
    }
  }

  /// Answers in place of the handshake — on a connection refused past the accept rate, or one
  /// the server shuts down before its handshake has arrived: the preface, then a GOAWAY with
  /// `refusal`'s status and retry-after hint; then closes.
  private mutating func refuse(_ refusal: RPCError) -> [Action] {
    state = .closed
    return [.close(after: [.preface(ConnectionPreface()), Self.goAway(lastCallID: 0, refusal)])]
  }

  /// Ends a call the client broke the rules of, with `code`; the connection carries on. A
  /// pipelined call ends in its place in the order (2.6): its handler answers the requests it
  /// has, then the call ends with this status rather than its handler's OK.
  private mutating func refuse(_ callID: UInt32, _ code: StatusCode, _ message: String, open: inout Open) -> [Action] {
    if case .pipelined = open.calls[callID]?.requests {
      var status = CallStatus(code: code.rawValue)
      status.message = message
      open.refusals[callID] = status
      guard open.calls[callID]?.isHalfClosed == false else { return [] }
      open.halfClose(callID)
      return [.deliverEndOfRequests(callID: callID)]
    }
    open.removeCall(callID)
    return [.cancelCall(callID: callID), .write([Self.status(callID, code, message)])] + closeIfDrained(open, after: [])
  }

  // MARK: Input from the handlers and the server

  /// A handler produced a response message (already compressed if `compressed`).
  public mutating func send(message: [UInt8], compressed: Bool, callID: UInt32) -> [Action] {
    var elements: [ConnectionElement] = []
    guard write(message, compressed: compressed, callID: callID, to: { elements.append($0) }) else { return [] }
    return [.write(elements)]
  }

  /// What ``send(message:compressed:callID:)`` does, handing the elements that carry the
  /// message (one unless it is larger than the client's frames) to `write`, for a transport
  /// that writes responses one by one and would rather not build arrays for each; `false`,
  /// with nothing written, when the call is over.
  public mutating func write(
    _ message: [UInt8], compressed: Bool, callID: UInt32, to write: (ConnectionElement) -> Void
  ) -> Bool {
    guard var open = state.takeOpen() else { return false }
    let index = open.calls.index(forKey: callID)
    if let index {
      open.pingsWithoutActivity = 0
      // A pipelined call's response answers its oldest unanswered request.
      if case .pipelined(let unanswered) = open.calls.values[index].requests, unanswered > 0 {
        open.calls.values[index].requests = .pipelined(unanswered: unanswered - 1)
        open.unansweredRequests -= 1
      }
    }
    let isLive = index != nil
    let maxFrameSize = open.limits.maxFrameSize
    // Back in place before the transport writes: a handler re-entered by the write finds the
    // connection's state, not the placeholder.
    state.restore(consume open)
    guard isLive else { return false }
    MessageFraming.write(message, compressed: compressed, callID: callID, maxFrameSize: maxFrameSize, to: write)
    return true
  }

  /// The largest frame payload the peer takes, for a transport that encodes responses of
  /// `callID` straight into their frames (``ResponseBatch``) rather than through
  /// ``write(_:compressed:callID:to:)``; `nil` when the call is over.
  public func maxFrameSize(forResponsesTo callID: UInt32) -> Int? {
    guard case .open(let open) = state, open.calls.index(forKey: callID) != nil else { return nil }
    return open.limits.maxFrameSize
  }

  /// Responses encoded straight into their frames were written: activity on the connection, as
  /// a write through ``write(_:compressed:callID:to:)`` is (the ping budget starts over).
  public mutating func responsesWritten() {
    guard var open = state.takeOpen() else { return }
    open.pingsWithoutActivity = 0
    state.restore(consume open)
  }

  /// `callID`'s handler started with its request, which the connection's budget of held
  /// requests then counts no longer (`Configuration.maxBufferedRequestBytes`). Until then —
  /// while a half-closed call waits for its turn to start — the request counts.
  public mutating func requestTaken(callID: UInt32) {
    guard var open = state.takeOpen() else { return }
    open.takeRequest(of: callID)
    state.restore(consume open)
  }

  /// A handler finished: send its status, which ends the call.
  public mutating func finishCall(callID: UInt32, status: CallStatus) -> [Action] {
    guard let (frame, closes) = endCall(callID: callID, status: status) else { return [] }
    return closes ? [.close(after: [.frame(frame)])] : [.write([.frame(frame)])]
  }

  /// What ``finishCall(callID:status:)`` does, for a transport that ends many calls at once
  /// (answering a commit's publishes) and would rather not build arrays of actions for each:
  /// the STATUS frame to write, and whether the connection closes once it is written (the last
  /// call of a connection going away); `nil` when the call is over.
  public mutating func endCall(callID: UInt32, status: CallStatus) -> (status: Frame, closes: Bool)? {
    guard var open = state.takeOpen() else { return nil }
    guard open.calls.index(forKey: callID) != nil else {
      state.restore(consume open)
      return nil
    }
    // A handler's own failure came first in the order; its OK, before the refusal.
    let status = status == Self.ok ? open.refusals[callID] ?? status : status
    open.removeCall(callID)
    let payload = status == Self.ok ? Self.okPayload : Self.payload(of: status, maxFrameSize: open.limits.maxFrameSize)
    let frame = Frame(kind: .status, callID: callID, payload: payload)
    guard isDrained(open) else {
      state.restore(consume open)
      return (frame, false)
    }
    state = .closed
    return (frame, true)
  }

  /// Begins a graceful shutdown: GOAWAY UNAVAILABLE naming the last call served, with
  /// `retryAfterMillis` (when the client should come back), then close once the calls in
  /// progress have ended. Before the handshake has arrived, the preface and the GOAWAY answer in
  /// place of the ServerHello, and the connection closes — on a connection refused past the
  /// accept rate, the refusal's GOAWAY, so that its client still learns when to come back.
  public mutating func shutDown(retryAfterMillis: UInt32? = nil) -> [Action] {
    let shuttingDown = RPCError(code: .unavailable, message: "the server is shutting down", retryAfterMillis: retryAfterMillis)
    switch state {
    case .awaitingPreface(let refusal), .awaitingHello(let refusal):
      return refuse(refusal ?? shuttingDown)
    case .open, .updating, .closed:
      return retire { open in
        guard open.lastServedCallID == nil else { return nil }
        open.lastServedCallID = open.highestCallID
        open.goAwayRetryAfterMillis = retryAfterMillis
        return ([], [Self.goAway(lastCallID: open.highestCallID, shuttingDown)])
      }
    }
  }

  /// The client will send nothing more: it shut its side of the connection down, or closed the
  /// connection (which the server cannot tell apart). The calls it finished are still served,
  /// a pipelined call as if half-closed after its last whole request (those it has sent are
  /// applied and answered); a call that has not sent its HALF_CLOSE is cancelled, as the rest
  /// of its requests will never come. No GOAWAY: the client takes no new call anyway. The
  /// connection closes once the calls served have ended.
  public mutating func peerFinishedSending() -> [Action] {
    retire { open in
      var actions: [Action] = []
      for callID in open.calls.keys.sorted() where open.calls[callID]?.isHalfClosed == false {
        if case .pipelined = open.calls[callID]?.requests {
          open.halfClose(callID)
          actions.append(.deliverEndOfRequests(callID: callID))
        } else {
          open.removeCall(callID)
          actions.append(.cancelCall(callID: callID))
        }
      }
      open.lastServedCallID = open.lastServedCallID ?? open.highestCallID
      return (actions, [])
    }
  }

  /// Serves no new call from now on, as `change` (which may return nil: nothing to do) sets
  /// up the open connection, returning what to do and what to write; before the handshake the
  /// connection just closes. The connection closes at once, after the writes, when no call is
  /// left.
  private mutating func retire(_ change: (inout Open) -> (actions: [Action], writes: [ConnectionElement])?) -> [Action] {
    switch state {
    case .awaitingPreface, .awaitingHello:
      state = .closed
      return [.close(after: [])]
    case .closed, .updating:
      return []
    case .open(var open):
      guard let (actions, writes) = change(&open) else { return [] }
      state = .open(open)
      let close = closeIfDrained(open, after: writes)
      return actions + (close.isEmpty ? (writes.isEmpty ? [] : [.write(writes)]) : close)
    }
  }

  // MARK: Helpers

  private mutating func closeIfDrained(_ open: Open, after elements: [ConnectionElement]) -> [Action] {
    guard isDrained(open) else { return [] }
    state = .closed
    return [.close(after: elements)]
  }

  /// The status most calls end with, and its encoding, made once and shared.
  private static let ok = CallStatus(code: StatusCode.ok.rawValue)
  private static let okPayload = ok.serializedBytes()

  /// Whether the connection is going away and its last call has ended.
  private func isDrained(_ open: Open) -> Bool {
    open.lastServedCallID != nil && open.calls.isEmpty
  }

  /// Closes the connection with a GOAWAY of `code`; `open` is the connection's state if the
  /// handshake was done (its calls are cancelled).
  private mutating func violation(_ code: StatusCode, _ message: String, sendPreface: Bool = false, open: Open? = nil) -> [Action] {
    let cancellations: [Action] = open?.calls.keys.sorted().map { .cancelCall(callID: $0) } ?? []
    state = .closed
    let frame = Self.goAway(lastCallID: open?.highestCallID ?? 0, RPCError(code: code, message: message))
    return cancellations + [.close(after: sendPreface ? [.preface(ConnectionPreface()), frame] : [frame])]
  }

  /// A GOAWAY serving calls up to `lastCallID`, with `error`'s status and retry-after hint.
  private static func goAway(lastCallID: UInt32, _ error: RPCError) -> ConnectionElement {
    var goAway = GoAway(lastCallID: lastCallID)
    goAway.code = error.code.rawValue
    goAway.message = StatusMessage.fitted(error.message)
    goAway.retryAfterMillis = error.retryAfterMillis
    return .frame(Frame(kind: .goAway, callID: 0, payload: goAway.serializedBytes()))
  }

  private static func status(_ callID: UInt32, _ code: StatusCode, _ message: String, retryAfterMillis: UInt32? = nil) -> ConnectionElement {
    var status = CallStatus(code: code.rawValue)
    status.message = StatusMessage.fitted(message)
    status.retryAfterMillis = retryAfterMillis
    return .frame(Frame(kind: .status, callID: callID, payload: status.serializedBytes()))
  }

  /// A handler's `status` as the payload of a STATUS frame no larger than the connection's
  /// frames: its message cut to ``StatusMessage/maxBytes``, and its metadata left out in the
  /// rare case that it would not fit even so (a frame past the limit could not be sent at all).
  private static func payload(of status: CallStatus, maxFrameSize: Int) -> [UInt8] {
    var fitted = status
    fitted.message = status.message.map(StatusMessage.fitted)
    let payload = fitted.serializedBytes()
    guard payload.count > maxFrameSize else { return payload }
    fitted.metadata = []
    return fitted.serializedBytes()
  }
}
