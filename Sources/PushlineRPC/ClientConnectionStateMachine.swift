public import PushlineSchema
import PushlineWire

/// The client side of one connection as a value: it takes what the server sent and what the
/// caller asked for, and returns the actions to perform. No I/O, no clock; see
/// ``ServerConnectionStateMachine`` for the server's half of the rules.
///
/// - ``start()`` sends the preface and the `ClientHello`. Calls may start at once, before the
///   `ServerHello` arrives (``Action/connectionReady(_:)``), so that a connection and its first
///   calls cost one round trip: until then they keep to ``limits``, the protocol's defaults.
/// - Every call ends exactly once with ``Action/finishCall(callID:status:)``: the server's
///   STATUS, CANCELLED for a call the caller cancelled, UNAVAILABLE for calls the server will
///   not serve after a GOAWAY or that were open when the connection closed (all retryable).
/// - A GOAWAY stops new calls; the connection closes once the calls it still serves end.
public struct ClientConnectionStateMachine: Sendable {
  /// What the client offers.
  public struct Configuration: Hashable, Sendable {
    public var limits: ConnectionLimits
    /// Compressions the client can decode, in order of preference.
    public var compressions: [Compression]
    /// A bearer token for the server's authentication.
    public var authToken: String?
    public var metadata: [MetadataEntry]
    public var userAgent: String?

    /// A configuration; the defaults suit most clients.
    public init(
      limits: ConnectionLimits = .defaults, compressions: [Compression] = [.deflate], authToken: String? = nil,
      metadata: [MetadataEntry] = [], userAgent: String? = "pushline-swift"
    ) {
      self.limits = limits
      self.compressions = compressions
      self.authToken = authToken
      self.metadata = metadata
      self.userAgent = userAgent
    }
  }

  /// The connection as the server's handshake settled it.
  public struct Server: Hashable, Sendable {
    /// The protocol version both sides speak.
    public var version: UInt32
    /// How messages may be compressed on this connection.
    public var compression: Compression
    /// The limits in force on this connection: the smaller of each side's.
    public var limits: ConnectionLimits
    /// The server's clock when it answered, in Unix milliseconds, for a client to correct its
    /// own by.
    public var serverTimeMillis: Int64?
    /// How often the server expects to hear from an idle client, in milliseconds.
    public var keepaliveIntervalMillis: UInt32?
  }

  /// What the transport must do.
  public enum Action: Hashable, Sendable {
    case write([ConnectionElement])
    /// The handshake completed: the server's limits and compression are in force from now on.
    case connectionReady(Server)
    /// A response message for a call.
    case deliverMessage(callID: UInt32, payload: [UInt8], compressed: Bool)
    /// The call ended with this status; nothing more arrives for it.
    case finishCall(callID: UInt32, status: CallStatus)
    /// The server answered a ping.
    case pongReceived(payload: [UInt8])
    /// The server will serve no new calls on this connection; open a new one for them.
    case goAwayReceived(GoAway)
    /// Write these, then close the connection.
    case close(after: [ConnectionElement])
  }

  /// How far the handshake has come.
  private enum Handshake: Sendable {
    case awaitingPreface, awaitingHello, done
  }

  private struct Open: Sendable {
    /// Until the `ServerHello` arrives, the protocol's defaults (within the client's own).
    var server: Server
    var handshake = Handshake.awaitingPreface
    var calls: Set<UInt32> = []
    var nextCallID: UInt32 = 1
    var lastServedCallID: UInt32?
    var messages = MessageReassembly()
  }

  private enum State: OpenPhaseState, Sendable {
    case idle
    /// From ``start()`` on: the handshake may still be under way.
    case open(Open)
    /// The open connection's tables are out of `state`, being changed in place (see
    /// ``OpenPhaseState``).
    case updating
    case closed

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

  private let configuration: Configuration
  private var state = State.idle

  /// A machine for a new connection.
  public init(configuration: Configuration = Configuration()) {
    self.configuration = configuration
  }

  /// Whether the connection has closed or is closing.
  public var isClosed: Bool {
    if case .closed = state { true } else { false }
  }

  /// The limits calls keep to: the protocol's defaults (within the client's own) until the
  /// `ServerHello` arrives, then those both peers agreed; `nil` before ``start()`` and once
  /// closed.
  public var limits: ConnectionLimits? {
    if case .open(let open) = state { open.server.limits } else { nil }
  }

  /// Opens the connection: the preface and the `ClientHello`.
  public mutating func start() -> [Action] {
    guard case .idle = state else { return [] }
    let defaults = Server(
      version: UInt32(ConnectionPreface.currentVersion), compression: .identity,
      limits: configuration.limits.agreed(with: nil), serverTimeMillis: nil, keepaliveIntervalMillis: nil)
    state = .open(Open(server: defaults))
    var hello = ClientHello(minVersion: 1, maxVersion: UInt32(ConnectionPreface.currentVersion))
    hello.compressions = configuration.compressions
    hello.limits = configuration.limits.announced
    hello.authToken = configuration.authToken
    hello.metadata = configuration.metadata
    hello.userAgent = configuration.userAgent
    return [.write([.preface(ConnectionPreface()), .frame(Frame(kind: .handshake, callID: 0, payload: hello.serializedBytes()))])]
  }

  // MARK: Input from the server

  /// Handles a preface or frame from the server.
  public mutating func received(_ element: ConnectionElement) -> [Action] {
    switch element {
    case .message, .encodedFrames:
      return element.frames.flatMap { received(.frame($0)) }
    case .preface, .frame:
      break
    }
    // In place: a switch over `(state, element)` would hold a copy of the open state, and
    // changing it then would copy its tables.
    guard var open = state.takeOpen() else { return [] }
    var actions: [Action] = []
    switch (element, open.handshake) {
    case (.frame(let frame), .done): actions = received(frame, open: &open)
    case (.frame(let frame), .awaitingHello): actions = receivedDuringHandshake(frame, open: &open)
    case (.preface, .awaitingPreface): open.handshake = .awaitingHello
    case (.preface, _): actions = violation("a second preface", open: open)
    case (_, _): actions = violation("expected the server's handshake", open: open)
    }
    state.restore(open)
    return actions
  }

  /// The status of a connection the server refused with `goAway` in place of its `ServerHello`:
  /// the GOAWAY's code (UNAVAILABLE when it has none), reason and retry-after hint.
  public static func refusalStatus(of goAway: GoAway?) -> CallStatus {
    // A refusal is never OK: a GOAWAY saying so (code 0) would end the calls it refused as if
    // served.
    let code = goAway?.code.flatMap { $0 == StatusCode.ok.rawValue ? nil : $0 } ?? StatusCode.unavailable.rawValue
    var status = CallStatus(code: code)
    status.message = "the server refused the connection: \(goAway?.message ?? "")"
    status.retryAfterMillis = goAway?.retryAfterMillis
    return status
  }

  /// A frame before the `ServerHello`: the `ServerHello`, or the GOAWAY of a server refusing
  /// the connection.
  private mutating func receivedDuringHandshake(_ frame: Frame, open: inout Open) -> [Action] {
    switch frame.kind {
    case .handshake:
      guard let hello = try? ServerHello(serializedBytes: frame.payload), hello.version >= 1,
        hello.version <= UInt32(ConnectionPreface.currentVersion)
      else { return violation("malformed ServerHello", open: open) }
      let compression = hello.compression ?? .identity
      guard compression == .identity || configuration.compressions.contains(compression) else {
        return violation("the server chose \(compression.name), which the client did not offer", open: open)
      }
      let limits = configuration.limits.agreed(with: hello.limits)
      // As a server holds its clients (2.4): smaller frames would cut every request into pieces
      // of a few bytes, and no concurrent call would leave the client unable to call at all.
      guard limits.maxFrameSize >= ServerConnectionStateMachine.minFrameSize, limits.maxConcurrentCalls >= 1 else {
        return violation(
          "the server's limits (frames of \(limits.maxFrameSize) bytes, \(limits.maxConcurrentCalls) concurrent calls) are below "
            + "\(ServerConnectionStateMachine.minFrameSize) bytes and 1 call", open: open)
      }
      open.server = Server(
        version: hello.version, compression: compression, limits: limits,
        serverTimeMillis: hello.serverTimeMillis, keepaliveIntervalMillis: hello.keepaliveIntervalMillis)
      open.handshake = .done
      return [.connectionReady(open.server)]
    case .goAway:
      // A server refusing the handshake says why, and when to come back, before closing: the
      // calls started meanwhile were not served, and end with its status — UNAVAILABLE past its
      // accept rate (retry after the hint), FAILED_PRECONDITION with no common version.
      let status = Self.refusalStatus(of: try? GoAway(serializedBytes: frame.payload))
      let finishes = open.calls.sorted().map { Action.finishCall(callID: $0, status: status) }
      state = .closed
      return finishes + [.close(after: [])]
    case let kind where !kind.isKnown:
      return []
    default:
      return violation("expected the server's handshake", open: open)
    }
  }

  private mutating func received(_ frame: Frame, open: inout Open) -> [Action] {
    switch frame.kind {
    case .message:
      guard open.calls.contains(frame.callID) else { return [] }  // Cancelled, or never ours.
      switch open.messages.receive(frame, limit: open.server.limits.maxMessageSize) {
      case .incomplete:
        return []
      case .complete(let flag, let message) where flag <= 1:
        return [.deliverMessage(callID: frame.callID, payload: Array(message), compressed: flag == 1)]
      case .complete, .malformed:
        return violation("MESSAGE without a valid compressed flag", open: open)
      case .tooLarge(let bytes):
        open.calls.remove(frame.callID)
        let cancel = ConnectionElement.frame(Frame(kind: .cancel, callID: frame.callID))
        return [.write([cancel]), finish(frame.callID, .resourceExhausted, "a response of \(bytes) bytes, limit \(open.server.limits.maxMessageSize)")]
          + closeIfDrained(open)
      }
    case .status:
      guard open.calls.remove(frame.callID) != nil else { return [] }
      open.messages.discard(callID: frame.callID)
      guard let status = try? CallStatus(serializedBytes: frame.payload) else {
        return [finish(frame.callID, .internal, "malformed status from the server")] + closeIfDrained(open)
      }
      return [.finishCall(callID: frame.callID, status: status)] + closeIfDrained(open)
    case .halfClose:
      return []  // Servers end calls with STATUS; a half-close adds nothing.
    case .ping:
      guard frame.payload.count == 8 else { return violation("malformed PING", open: open) }
      return [.write([.frame(Frame(kind: .pong, callID: 0, payload: frame.payload))])]
    case .pong:
      return [.pongReceived(payload: frame.payload)]
    case .goAway:
      guard let goAway = try? GoAway(serializedBytes: frame.payload) else { return violation("malformed GOAWAY", open: open) }
      open.lastServedCallID = min(goAway.lastCallID, open.lastServedCallID ?? .max)
      let refused = open.calls.filter { $0 > goAway.lastCallID }.sorted()
      open.calls.subtract(refused)
      for callID in refused { open.messages.discard(callID: callID) }
      // The server never saw these calls: they are safe to retry, and when is the GOAWAY's hint.
      let finishes = refused.map {
        finish($0, .unavailable, "the server went away before serving the call", retryAfterMillis: goAway.retryAfterMillis)
      }
      return [.goAwayReceived(goAway)] + finishes + closeIfDrained(open)
    case .handshake, .callStart, .cancel:
      return violation("a server may not send \(frame.kind) here", open: open)
    default:
      return []
    }
  }

  /// The decoder found the server's bytes malformed.
  public mutating func receivedViolation(_ violation: ProtocolViolation) -> [Action] {
    if case .open(let open) = state { return self.violation(violation.description, open: open) }
    return self.violation(violation.description)
  }

  /// The connection closed (by either side, or the network): every open call ends UNAVAILABLE.
  public mutating func connectionClosed() -> [Action] {
    guard !isClosed else { return [] }
    let actions: [Action] = if case .open(let open) = state { finishAll(open, .unavailable, "the connection closed") } else { [] }
    state = .closed
    return actions
  }

  // MARK: Input from the caller

  /// Starts a call; returns its id and the actions, or `nil` and no actions when no call can
  /// start on this connection (not started, going away, closed): the caller's call is then
  /// UNAVAILABLE, to retry on another connection.
  public mutating func startCall(_ start: CallStart) -> (callID: UInt32?, actions: [Action]) {
    guard var open = state.takeOpen() else { return (nil, []) }
    defer { state.restore(open) }
    guard open.lastServedCallID == nil else { return (nil, []) }
    let callID = open.nextCallID
    open.nextCallID += 1
    open.calls.insert(callID)
    return (callID, [.write([.frame(Frame(kind: .callStart, callID: callID, payload: start.serializedBytes()))])])
  }

  /// Sends a request message (already compressed if `compressed`).
  public func send(message: [UInt8], compressed: Bool, callID: UInt32) -> [Action] {
    guard case .open(let open) = state, open.calls.contains(callID) else { return [] }
    var elements: [ConnectionElement] = []
    MessageFraming.write(message, compressed: compressed, callID: callID, maxFrameSize: open.server.limits.maxFrameSize) {
      elements.append($0)
    }
    return [.write(elements)]
  }

  /// Ends the requests of a call.
  public func halfClose(callID: UInt32) -> [Action] {
    guard case .open(let open) = state, open.calls.contains(callID) else { return [] }
    return [.write([.frame(Frame(kind: .halfClose, callID: callID))])]
  }

  /// Abandons a call: CANCEL to the server, CANCELLED to the caller.
  public mutating func cancel(callID: UInt32) -> [Action] {
    guard var open = state.takeOpen() else { return [] }
    defer { state.restore(open) }
    guard open.calls.remove(callID) != nil else { return [] }
    open.messages.discard(callID: callID)
    return [.write([.frame(Frame(kind: .cancel, callID: callID))]), finish(callID, .cancelled, "cancelled by the client")]
      + closeIfDrained(open)
  }

  /// Sends a keepalive ping carrying `payload` (eight bytes).
  public func ping(payload: [UInt8]) -> [Action] {
    guard case .open = state, payload.count == 8 else { return [] }
    return [.write([.frame(Frame(kind: .ping, callID: 0, payload: payload))])]
  }

  // MARK: Helpers

  private mutating func closeIfDrained(_ open: Open) -> [Action] {
    guard open.lastServedCallID != nil, open.calls.isEmpty else { return [] }
    state = .closed
    return [.close(after: [])]
  }

  /// Closes the connection with a GOAWAY; `open` is the connection's state once started (its
  /// calls end with INTERNAL).
  private mutating func violation(_ message: String, open: Open? = nil) -> [Action] {
    guard !isClosed else { return [] }
    let finishes = open.map { finishAll($0, .internal, "protocol violation: \(message)") } ?? []
    state = .closed
    var goAway = GoAway(lastCallID: 0)
    goAway.code = StatusCode.internal.rawValue
    goAway.message = message
    return finishes + [.close(after: [.frame(Frame(kind: .goAway, callID: 0, payload: goAway.serializedBytes()))])]
  }

  private func finishAll(_ open: Open, _ code: StatusCode, _ message: String) -> [Action] {
    open.calls.sorted().map { finish($0, code, message) }
  }

  private func finish(_ callID: UInt32, _ code: StatusCode, _ message: String, retryAfterMillis: UInt32? = nil) -> Action {
    var status = CallStatus(code: code.rawValue)
    status.message = message
    status.retryAfterMillis = retryAfterMillis
    return .finishCall(callID: callID, status: status)
  }
}
