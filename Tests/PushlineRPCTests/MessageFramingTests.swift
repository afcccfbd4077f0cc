import PushlineRPC
import PushlineSchema
import PushlineWire
import Testing

@Suite("Messages larger than a frame")
struct MessageFramingTests {
  typealias Machine = ServerConnectionStateMachine

  /// Every frame stays within the limit, only the last lacks CONTINUES, and reassembly gives
  /// back the message — at every frame size from 1 byte to larger than the message.
  @Test func splitAndReassembleAtEveryFrameSize() {
    let message = (0..<40).map { UInt8($0) }
    for maxFrameSize in 1...45 {
      let frames = MessageFraming.frames(for: message, compressed: true, callID: 3, maxFrameSize: maxFrameSize)
      #expect(frames.allSatisfy { $0.payload.count <= maxFrameSize && $0.kind == .message && $0.callID == 3 })
      #expect(frames.dropLast().allSatisfy { $0.flags == MessageFraming.continues } && frames.last?.flags == 0)
      var reassembly = MessageReassembly()
      let outcomes = frames.map { reassembly.receive($0, limit: message.count) }
      #expect(outcomes.dropLast().allSatisfy { $0 == .incomplete })
      #expect(outcomes.last == .complete(flag: 1, message: message[...]), "frame size \(maxFrameSize)")
      #expect(!reassembly.isUnfinished(callID: 3))
    }
  }

  /// A message whose flag and bytes fit a frame is written as one `.message`, the wire twin of
  /// its single frame; one byte more and it goes as split frames.
  @Test func aMessageThatFitsAFrameIsWrittenWhole() {
    for (count, maxFrameSize) in [(0, 1), (7, 8), (8, 8), (300, 1 << 20)] {
      let message = (0..<count).map { UInt8(truncatingIfNeeded: $0) }
      var elements: [ConnectionElement] = []
      MessageFraming.write(message, compressed: true, callID: 5, maxFrameSize: maxFrameSize) { elements.append($0) }
      let frames = MessageFraming.frames(for: message, compressed: true, callID: 5, maxFrameSize: maxFrameSize)
      #expect(elements.compactMap(\.frame) == frames, "\(count) bytes in frames of \(maxFrameSize)")
      if frames.count == 1 {
        #expect(elements == [.message(callID: 5, compressed: true, bytes: message)])
      } else {
        #expect(elements == frames.map(ConnectionElement.frame))
      }
    }
  }

  /// Two calls' messages interleaved frame by frame come apart intact.
  @Test func interleavedCallsReassembleSeparately() {
    let a = MessageFraming.frames(for: Array(repeating: 0xA, count: 10), compressed: false, callID: 1, maxFrameSize: 4)
    let b = MessageFraming.frames(for: Array(repeating: 0xB, count: 7), compressed: false, callID: 2, maxFrameSize: 4)
    var reassembly = MessageReassembly()
    var complete: [UInt32: [UInt8]] = [:]
    for frame in zip(a, b).flatMap({ [$0, $1] }) + a.dropFirst(b.count) {
      if case .complete(_, let message) = reassembly.receive(frame, limit: 100) { complete[frame.callID] = Array(message) }
    }
    #expect(complete == [1: Array(repeating: 0xA, count: 10), 2: Array(repeating: 0xB, count: 7)])
  }

  /// Collecting stops as soon as the frames exceed the message limit.
  @Test func framesBeyondTheLimitAreRefusedBeforeTheLastArrives() {
    let frames = MessageFraming.frames(for: Array(repeating: 1, count: 30), compressed: false, callID: 1, maxFrameSize: 8)
    var reassembly = MessageReassembly()
    #expect(reassembly.receive(frames[0], limit: 10) == .incomplete)
    #expect(reassembly.receive(frames[1], limit: 10) == .tooLarge(bytes: 15))
    #expect(!reassembly.isUnfinished(callID: 1))
  }

  /// The server's connection: a split request is delivered whole; a split response respects
  /// the client's frame size; HALF_CLOSE in the middle of a message ends that call INTERNAL
  /// and the connection goes on.
  @Test func theServerMachineSplitsAndReassembles() throws {
    // The smallest frames a server takes from a client.
    let frameSize = ServerConnectionStateMachine.minFrameSize
    var limits = Limits()
    limits.maxFrameSize = UInt32(frameSize)
    var (machine, _) = ServerConnectionStateMachineTests.connected(limits: limits)
    _ = machine.received(ServerConnectionStateMachineTests.start(1), serverTimeMillis: 0)
    let request = Array(repeating: UInt8(7), count: 2 * frameSize + 500)
    let frames = MessageFraming.frames(for: request, compressed: false, callID: 1, maxFrameSize: frameSize)
    let actions = frames.flatMap { machine.received(.frame($0), serverTimeMillis: 0) }
    #expect(actions == [.deliverMessage(callID: 1, payload: request[...], compressed: false)])

    let response = machine.send(message: Array(repeating: 9, count: 2 * frameSize + 1), compressed: false, callID: 1)
    guard case .write(let elements)? = response.first else {
      Issue.record("expected the response's frames, got \(response)")
      return
    }
    #expect(elements.compactMap(\.frame?.payload.count) == [frameSize, frameSize, 2])  // the flag byte, then the message
    #expect(elements.allSatisfy { if case .frame = $0 { true } else { false } })

    _ = machine.received(ServerConnectionStateMachineTests.start(2), serverTimeMillis: 0)
    _ = machine.received(.frame(frames[0].with(callID: 2)), serverTimeMillis: 0)
    let halfClose = machine.received(.frame(Frame(kind: .halfClose, callID: 2)), serverTimeMillis: 0)
    var refusal = CallStatus(code: StatusCode.internal.rawValue)
    refusal.message = "HALF_CLOSE in the middle of a message"
    #expect(halfClose == [.cancelCall(callID: 2), .write([.frame(Frame(kind: .status, callID: 2, payload: refusal.serializedBytes()))])])
    #expect(!machine.isClosed)
  }
}

extension Frame {
  fileprivate func with(callID: UInt32) -> Frame {
    Frame(kind: kind, flags: flags, callID: callID, payload: payload)
  }
}
