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

  @Test func callsOpenWhenTheConnectionDropsEndUnavailable() throws {
    var pair = Pair.connected()
    let (first, startFirst) = pair.client.startCall(CallStart(method: "/a"))
    pair.client(startFirst)
    let (second, startSecond) = pair.client.startCall(CallStart(method: "/b"))
    pair.client(startSecond)
    let ends = pair.client.connectionClosed()
    #expect(ends.count == 2)
    for (action, id) in zip(ends, [first, second]) {
      guard case .finishCall(let callID, let status) = action else {
        Issue.record("expected finishCall, got \(action)")
        continue
      }
      #expect(callID == id)
      #expect(status.code == StatusCode.unavailable.rawValue)
    }
  }

  @Test func pingIsAnsweredWithTheSamePayload() {
    var pair = Pair.connected()
    pair.client(pair.client.ping(payload: [8, 7, 6, 5, 4, 3, 2, 1]))
    #expect(pair.clientEvents.last == .pongReceived(payload: [8, 7, 6, 5, 4, 3, 2, 1]))
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
