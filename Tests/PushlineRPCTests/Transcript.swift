import PushlineRPC
import PushlineSchema
import PushlineWire

/// The conversation docs/PROTOCOL.md section 2.8 prints: a handshake, a unary health check and a
/// two-response server stream, produced by the client and server state machines talking to
/// each other, each element with its direction.
enum Transcript {
  static func conversation() -> [(fromClient: Bool, bytes: [UInt8])] {
    var client = ClientConnectionStateMachine(configuration: .init(authToken: "t0k", userAgent: "pushline-swift"))
    var server = ServerConnectionStateMachine()
    var elements: [(fromClient: Bool, bytes: [UInt8])] = []
    func record(_ element: ConnectionElement, fromClient: Bool) {
      switch element {
      case .preface(let preface): elements.append((fromClient, preface.bytes))
      case .frame, .message, .encodedFrames: elements += element.frames.map { (fromClient, $0.bytes) }
      }
    }
    func serverActions(_ actions: [ServerConnectionStateMachine.Action]) {
      for case .write(let written) in actions {
        for element in written {
          record(element, fromClient: false)
          _ = client.received(element)
        }
      }
    }
    func clientActions(_ actions: [ClientConnectionStateMachine.Action]) {
      for case .write(let written) in actions {
        for element in written {
          record(element, fromClient: true)
          serverActions(server.received(element, serverTimeMillis: 1_763_830_800_000))
        }
      }
    }
    clientActions(client.start())
    let (check, checkStart) = client.startCall(CallStart(method: "/pushline.Health/Check"))
    clientActions(checkStart)
    clientActions(client.send(message: HealthCheckRequest().serializedBytes(), compressed: false, callID: check!))
    clientActions(client.halfClose(callID: check!))
    serverActions(server.send(message: HealthCheckResponse(status: .serving).serializedBytes(), compressed: false, callID: check!))
    serverActions(server.finishCall(callID: check!, status: CallStatus(code: StatusCode.ok.rawValue)))
    let (stream, streamStart) = client.startCall(CallStart(method: "/example.Counter/Count"))
    clientActions(streamStart)
    clientActions(client.send(message: MetadataEntry(key: "n").serializedBytes(), compressed: false, callID: stream!))
    clientActions(client.halfClose(callID: stream!))
    for key in ["1", "2"] {
      serverActions(server.send(message: MetadataEntry(key: key).serializedBytes(), compressed: false, callID: stream!))
    }
    serverActions(server.finishCall(callID: stream!, status: CallStatus(code: StatusCode.ok.rawValue)))
    return elements
  }
}
