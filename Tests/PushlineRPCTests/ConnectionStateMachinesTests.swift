import PushlineRPC
import PushlineSchema
import PushlineWire
import Testing

/// The client and server machines wired to each other in memory: every element one writes is
/// received by the other, in order, so whole conversations run with no I/O at all.
@Suite("Client and server state machines together")
struct ConnectionStateMachinesTests {
  struct Pair {
    var client = ClientConnectionStateMachine(configuration: .init(authToken: "t"))
    var server = ServerConnectionStateMachine()
    /// What each side did that is not a write, in order.
    var clientEvents: [ClientConnectionStateMachine.Action] = []
    var serverEvents: [ServerConnectionStateMachine.Action] = []
    var closedByClient = false
    var closedByServer = false

    mutating func client(_ actions: [ClientConnectionStateMachine.Action]) {
      for action in actions {
        switch action {
        case .write(let elements):
          for element in elements { server(server.received(element, serverTimeMillis: 42)) }
        case .close(let elements):
          closedByClient = true
          for element in elements { server(server.received(element, serverTimeMillis: 42)) }
        default:
          clientEvents.append(action)
        }
      }
    }

    mutating func server(_ actions: [ServerConnectionStateMachine.Action]) {
      for action in actions {
        switch action {
        case .write(let elements):
          for element in elements { client(client.received(element)) }
        case .close(let elements):
          closedByServer = true
          for element in elements { client(client.received(element)) }
          client(client.connectionClosed())
        default:
          serverEvents.append(action)
        }
      }
    }

    static func connected() -> Pair {
      var pair = Pair()
      pair.client(pair.client.start())
      return pair
    }
  }

  @Test func handshakeCompletesOnBothSides() {
    let pair = Pair.connected()
    guard case .connectionReady(let server)? = pair.clientEvents.first, case .connectionReady(let peer)? = pair.serverEvents.first else {
      Issue.record("both sides should be ready: \(pair.clientEvents) \(pair.serverEvents)")
      return
    }
    #expect(server.serverTimeMillis == 42)
    #expect(server.compression == .deflate)
    #expect(peer.authToken == "t")
  }

  @Test func aUnaryCallRunsEndToEnd() throws {
    var pair = Pair.connected()
    let (callID, actions) = pair.client.startCall(CallStart(method: "/pushline.Health/Check"))
    let id = try #require(callID)
    pair.client(actions)
    pair.client(pair.client.send(message: [1, 2], compressed: false, callID: id))
    pair.client(pair.client.halfClose(callID: id))
    #expect(pair.serverEvents.dropFirst().map { "\($0)" }.count == 3)
    // The request went as a message's parts (one frame's worth), and arrives as its frame would.
    #expect(pair.serverEvents.contains(.deliverMessage(callID: id, payload: [1, 2], compressed: false)))
    pair.server(pair.server.send(message: [3], compressed: false, callID: id))
    pair.server(pair.server.finishCall(callID: id, status: CallStatus(code: 0)))
    #expect(pair.clientEvents.dropFirst().first == .deliverMessage(callID: id, payload: [3], compressed: false))
    guard case .finishCall(id, let status)? = pair.clientEvents.last else {
      Issue.record("the call should end with the server's status")
      return
    }
    #expect(status.code == 0)
  }

  @Test func cancellationEndsTheCallOnBothSides() throws {
    var pair = Pair.connected()
    let (callID, actions) = pair.client.startCall(CallStart(method: "/m"))
    pair.client(actions)
    pair.client(pair.client.cancel(callID: try #require(callID)))
    #expect(pair.serverEvents.last == .cancelCall(callID: 1))
    guard case .finishCall(1, let status)? = pair.clientEvents.last else {
      Issue.record("the caller learns the call was cancelled")
      return
    }
    #expect(status.code == StatusCode.cancelled.rawValue)
    // The handler's late status is dropped.
    #expect(pair.server.finishCall(callID: 1, status: CallStatus(code: 0)).isEmpty)
  }

  @Test func goAwayLetsTheCallInFlightFinishThenCloses() throws {
    var pair = Pair.connected()
    let (callID, actions) = pair.client.startCall(CallStart(method: "/m"))
    pair.client(actions)
    pair.server(pair.server.shutDown())
    guard case .goAwayReceived(let goAway)? = pair.clientEvents.last else {
      Issue.record("the client learns of the GOAWAY")
      return
    }
    #expect(goAway.lastCallID == 1)
    #expect(pair.client.startCall(CallStart(method: "/m")).callID == nil)
    pair.server(pair.server.finishCall(callID: try #require(callID), status: CallStatus(code: 0)))
    guard case .finishCall(1, let status)? = pair.clientEvents.last else {
      Issue.record("the call in flight completes")
      return
    }
    #expect(status.code == 0)
    #expect(pair.closedByServer)
    #expect(pair.client.isClosed && pair.server.isClosed)
  }

  /// A call the client started after the server's GOAWAY left (crossing it on the wire) was
  /// never served: it ends UNAVAILABLE with the GOAWAY's retry-after hint, so that a client of
  /// a draining server waits as long as its other calls were told to.
  @Test func aCallCrossingTheGoAwayEndsWithItsRetryHint() throws {
    var pair = Pair.connected()
    let (callID, _) = pair.client.startCall(CallStart(method: "/m"))  // its frames cross the GOAWAY
    var goAway = GoAway(lastCallID: 0)
    goAway.code = StatusCode.unavailable.rawValue
    goAway.retryAfterMillis = 2_500
    let received = pair.client.received(.frame(Frame(kind: .goAway, callID: 0, payload: goAway.serializedBytes())))
    // After the GOAWAY's own event, the refused call's end.
    let status = try #require(Self.statuses(ending: [callID], in: Array(received.dropFirst())).first)
    #expect(status.code == StatusCode.unavailable.rawValue)
    #expect(status.retryAfterMillis == 2_500)
  }

  @Test func callsOpenWhenTheConnectionDropsEndUnavailable() throws {
    var pair = Pair.connected()
    let (first, startFirst) = pair.client.startCall(CallStart(method: "/a"))
    pair.client(startFirst)
    let (second, startSecond) = pair.client.startCall(CallStart(method: "/b"))
    pair.client(startSecond)
    let ends = pair.client.connectionClosed()
    #expect(ends.count == 2)
    for status in Self.statuses(ending: [first, second], in: ends) {
      #expect(status.code == StatusCode.unavailable.rawValue)
    }
  }

  /// The statuses of the `finishCall` actions that begin `actions`, which must end the calls
  /// `ids` in order.
  static func statuses(ending ids: [UInt32?], in actions: [ClientConnectionStateMachine.Action]) -> [CallStatus] {
    zip(actions, ids).compactMap { action, id in
      guard case .finishCall(let callID, let status) = action, callID == id else {
        Issue.record("expected call \(id.map(String.init) ?? "nil") to end, got \(action)")
        return nil
      }
      return status
    }
  }

  @Test func pingIsAnsweredWithTheSamePayload() {
    var pair = Pair.connected()
    pair.client(pair.client.ping(payload: [8, 7, 6, 5, 4, 3, 2, 1]))
    #expect(pair.clientEvents.last == .pongReceived(payload: [8, 7, 6, 5, 4, 3, 2, 1]))
  }

  /// The elements `actions` write, in order.
  static func written(_ actions: [ClientConnectionStateMachine.Action]) -> [ConnectionElement] {
    actions.flatMap { action -> [ConnectionElement] in
      if case .write(let elements) = action { elements } else { [] }
    }
  }

  @Test func callsStartedBeforeTheServerHelloGoOutWithTheClientHelloAndAreServed() throws {
    let large = ConnectionLimits(maxFrameSize: 4 << 20, maxMessageSize: 8 << 20, maxConcurrentCalls: 1_000)
    var client = ClientConnectionStateMachine(configuration: .init(limits: large, authToken: "t"))
    var server = ServerConnectionStateMachine(configuration: .init(limits: large))
    var flight = Self.written(client.start())
    // Until the ServerHello, the protocol's defaults: a 1.5 MiB request crosses in two frames.
    #expect(client.limits == .defaults)
    let (callID, start) = client.startCall(CallStart(method: "/m"))
    let id = try #require(callID)
    flight += Self.written(start)
    flight += Self.written(client.send(message: Array(repeating: 7, count: 3 << 19), compressed: false, callID: id))
    flight += Self.written(client.halfClose(callID: id))
    #expect(flight.filter { if case .frame(let frame) = $0 { frame.kind == .message } else { false } }.count == 2)

    // The server reads the whole flight at once: the handshake first, then the call.
    var answer: [ConnectionElement] = []
    var events: [ServerConnectionStateMachine.Action] = []
    for element in flight {
      for action in server.received(element, serverTimeMillis: 42) {
        if case .write(let elements) = action { answer += elements } else { events.append(action) }
      }
    }
    #expect(events.count == 4)  // ready, the call's start, its request, its end of requests
    #expect(events.contains(.deliverMessage(callID: id, payload: ArraySlice(repeating: 7, count: 3 << 19), compressed: false)))
    for action in server.send(message: [3], compressed: false, callID: id) + server.finishCall(callID: id, status: CallStatus(code: 0)) {
      if case .write(let elements) = action { answer += elements }
    }

    let received = answer.flatMap { client.received($0) }
    guard received.count == 3, case .connectionReady = received[0], case .finishCall(id, let status) = received[2] else {
      Issue.record("expected ready, the response and the call's end, got \(received)")
      return
    }
    #expect(received[1] == .deliverMessage(callID: id, payload: [3], compressed: false))
    #expect(status.code == 0)
    #expect(client.limits == large)
  }

  @Test func aRefusedConnectionEndsTheCallsStartedBeforeItsServerHelloWithTheRetryHint() throws {
    var client = ClientConnectionStateMachine(configuration: .init(authToken: "t"))
    var server = ServerConnectionStateMachine(
      refusal: RPCError(code: .unavailable, message: "too many connections", retryAfterMillis: 250))
    var flight = Self.written(client.start())
    let (first, startFirst) = client.startCall(CallStart(method: "/a"))
    let (second, startSecond) = client.startCall(CallStart(method: "/b"))
    flight += Self.written(startFirst + startSecond)
    var answer: [ConnectionElement] = []
    for element in flight {
      for action in server.received(element, serverTimeMillis: 42) {
        switch action {
        case .write(let elements), .close(let elements): answer += elements
        default: Issue.record("a refusing server serves no call: \(action)")
        }
      }
    }
    let received = answer.flatMap { client.received($0) }
    guard received.count == 3, case .close = received[2] else {
      Issue.record("expected both calls to end, then a close, got \(received)")
      return
    }
    for status in Self.statuses(ending: [first, second], in: received) {
      #expect(status.code == StatusCode.unavailable.rawValue)
      #expect(status.retryAfterMillis == 250)
      #expect(status.message?.contains("too many connections") == true)
    }
    #expect(client.isClosed)
  }

  @Test func aFrameOtherThanTheHandshakeBeforeTheServerHelloEndsTheEarlyCalls() throws {
    var client = ClientConnectionStateMachine()
    _ = client.start()
    let (callID, _) = client.startCall(CallStart(method: "/m"))
    _ = client.received(.preface(ConnectionPreface()))
    let actions = client.received(.frame(Frame(kind: .message, callID: try #require(callID), payload: [0, 1])))
    guard actions.count == 2, case .finishCall(callID, let status) = actions[0], case .close = actions[1] else {
      Issue.record("expected the call to end, then a GOAWAY and a close, got \(actions)")
      return
    }
    #expect(status.code == StatusCode.internal.rawValue)
    #expect(client.isClosed)
  }

  @Test func aServerThatChoosesAnUnofferedCompressionIsAViolation() {
    var client = ClientConnectionStateMachine(configuration: .init(compressions: []))
    _ = client.start()
    _ = client.received(.preface(ConnectionPreface()))
    var hello = ServerHello(version: 1)
    hello.compression = .deflate
    let actions = client.received(.frame(Frame(kind: .handshake, callID: 0, payload: hello.serializedBytes())))
    guard case .close? = actions.last else {
      Issue.record("expected a close, got \(actions)")
      return
    }
    #expect(client.isClosed)
  }
}
