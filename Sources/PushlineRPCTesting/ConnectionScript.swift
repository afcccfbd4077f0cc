import PushlineRPC
import PushlineSchema
import PushlineWire

/// Drives the connection state machines through a script of bytes, for the fuzzer
/// (`tools/fuzz`, `FuzzConnection`) and for property tests: the first byte picks the server's
/// machine or the client's; the rest says what the peer sends (frames of any kind, call id and
/// payload, after a valid opening or garbage in its place) interleaved with what the machine's
/// own side does (calls, answers, statuses, shutdown, the peer's end of file).
///
/// Whatever the script, a machine must never trap; and once the server's has said to close,
/// it must ask for nothing more to be written.
public enum ConnectionScript {
  /// Runs `script`; returns what broke the machines' rules, or `nil`.
  public static func run(_ script: UnsafeRawBufferPointer) -> String? {
    var reader = Reader(script)
    guard (reader.byte() ?? 0) % 2 == 0 else {
      runClient(&reader)
      return nil
    }
    return runServer(&reader)
  }

  /// The server's machine, driven by `script`: a write asked for after the close is returned.
  private static func runServer(_ script: inout Reader) -> String? {
    let pipelined = "/fuzz.Pipe/Line"
    var limits = ConnectionLimits.defaults
    limits.maxConcurrentCalls = 4
    limits.maxMessageSize = 64
    var machine = ServerConnectionStateMachine(
      configuration: .init(limits: limits, pingBudget: 3, maxBufferedRequestBytes: 128, pipelinedMethods: [pipelined]),
      refusal: (script.byte() ?? 1) == 0 ? RPCError(code: .unavailable, message: "busy", retryAfterMillis: 10) : nil)
    var closed = false
    var broken: String?
    func check(_ actions: [ServerConnectionStateMachine.Action]) {
      for action in actions {
        switch action {
        case .close: closed = true
        case .write(let elements) where closed && !elements.isEmpty: broken = broken ?? "a write after the close: \(actions)"
        default: break
        }
      }
    }
    if (script.byte() ?? 1) % 4 != 0 {  // mostly a well-formed opening, so that calls are reached
      check(machine.received(.preface(ConnectionPreface()), serverTimeMillis: 0))
      var hello = ClientHello(minVersion: 1, maxVersion: 1)
      hello.compressions = [.deflate]
      check(machine.received(.frame(Frame(kind: .handshake, callID: 0, payload: hello.serializedBytes())), serverTimeMillis: 0))
    }
    while let op = script.byte() {
      let callID = UInt32(script.byte() ?? 0) % 8
      switch op % 12 {
      case 0:  // CALL_START of a method, one-request or pipelined
        let method = (script.byte() ?? 0) % 2 == 0 ? "/fuzz.One/Call" : pipelined
        check(machine.received(.frame(Frame(kind: .callStart, callID: callID, payload: CallStart(method: method).serializedBytes())), serverTimeMillis: 0))
      case 1: check(machine.received(.frame(Frame(kind: .message, callID: callID, payload: script.bytes())), serverTimeMillis: 0))
      case 2: check(machine.received(.frame(Frame(kind: .halfClose, callID: callID, payload: [])), serverTimeMillis: 0))
      case 3: check(machine.received(.frame(Frame(kind: .cancel, callID: callID, payload: [])), serverTimeMillis: 0))
      case 4:  // any frame at all
        let kind = FrameKind(rawValue: script.byte() ?? 0)
        check(machine.received(.frame(Frame(kind: kind, callID: callID, payload: script.bytes())), serverTimeMillis: 0))
      case 5: check(machine.received(.preface(ConnectionPreface()), serverTimeMillis: 0))
      case 6: check(machine.send(message: script.bytes(), compressed: false, callID: callID))
      case 7: check(machine.finishCall(callID: callID, status: CallStatus(code: UInt32(script.byte() ?? 0) % 17)))
      case 8:
        if let (_, closes) = machine.endCall(callID: callID, status: CallStatus(code: 0)), closes { closed = true }
      case 9: check(machine.shutDown(retryAfterMillis: 5))
      case 10: check(machine.peerFinishedSending())
      default: check(machine.receivedViolation(ProtocolViolation(.frameTooLarge, "fuzz")))
      }
    }
    return broken
  }

  /// The client's machine, driven by `script`: what a server, well-behaved or not, may send it.
  private static func runClient(_ script: inout Reader) {
    var machine = ClientConnectionStateMachine()
    _ = machine.start()
    if (script.byte() ?? 1) % 4 != 0 {
      _ = machine.received(.preface(ConnectionPreface()))
      var hello = ServerHello(version: 1)
      hello.compression = (script.byte() ?? 0) % 2 == 0 ? .deflate : .identity
      _ = machine.received(.frame(Frame(kind: .handshake, callID: 0, payload: hello.serializedBytes())))
    }
    while let op = script.byte() {
      let callID = UInt32(script.byte() ?? 0) % 8
      switch op % 10 {
      case 0: _ = machine.startCall(CallStart(method: "/fuzz.One/Call"))
      case 1: _ = machine.send(message: script.bytes(), compressed: false, callID: callID)
      case 2: _ = machine.halfClose(callID: callID)
      case 3: _ = machine.cancel(callID: callID)
      case 4:  // any frame the server may send, or not
        let kind = FrameKind(rawValue: script.byte() ?? 0)
        _ = machine.received(.frame(Frame(kind: kind, callID: callID, payload: script.bytes())))
      case 5: _ = machine.received(.frame(Frame(kind: .message, callID: callID, payload: script.bytes())))
      case 6: _ = machine.received(.frame(Frame(kind: .status, callID: callID, payload: script.bytes())))
      case 7: _ = machine.received(.preface(ConnectionPreface()))
      case 8: _ = machine.ping(payload: script.bytes())
      default:
        _ = (script.byte() ?? 0) % 2 == 0
          ? machine.connectionClosed() : machine.receivedViolation(ProtocolViolation(.reservedBitSet, "fuzz"))
      }
    }
  }

  /// A script's bytes, read as bytes and as runs of bytes with a length byte first.
  private struct Reader {
    private let input: UnsafeRawBufferPointer
    private var position = 0

    init(_ input: UnsafeRawBufferPointer) { self.input = input }

    /// The next byte, or nil at the end.
    mutating func byte() -> UInt8? {
      guard position < input.count else { return nil }
      defer { position += 1 }
      return input[position]
    }

    /// A length byte, then up to that many bytes.
    mutating func bytes() -> [UInt8] {
      let count = min(Int(byte() ?? 0), input.count - position)
      defer { position += count }
      return Array(input[position..<position + count])
    }
  }
}
