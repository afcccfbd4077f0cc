@testable import PushlineRPC
@testable import PushlineRPCNIO
import PushlineSchema
import Testing

/// A pipelined call's answers in request order, and its one end, whatever order its handlers
/// answer in — a handler that answers a request twice included (the first answer counts).
@Suite("Pipelined call: order of answers and end")
struct PipelinedCallOrderTests {
  /// What the call passes on: a response (its first byte) or its end's status code.
  enum Sent: Equatable {
    case response(UInt8)
    case end(UInt32)
  }

  /// A call whose transport records what it sends.
  final class Recorder {
    let call: PipelinedCall
    var sent: [Sent] = []

    init() {
      let peer = ServerConnectionStateMachine.Peer(
        version: 1, compression: .identity, limits: .defaults, authToken: nil, metadata: [], userAgent: nil)
      call = PipelinedCall(context: ServerContext(peer: peer, start: CallStart(method: "/test/M")), handler: { _, _, _ in })
    }

    /// Numbers `count` requests, as they arrive; whether each got a number.
    @discardableResult func receive(_ count: Int) -> [Bool] { (0..<count).map { _ in call.numberNextRequest() != nil } }

    func succeed(_ request: UInt32) {
      call.answer(request, with: .success([UInt8(request)]), output: record)
    }

    func fail(_ request: UInt32, _ code: StatusCode) {
      call.answer(request, with: .failure(RPCError(code: code, message: "")), output: record)
    }

    /// A failure answered on the loop: it stops the call's later requests at once, and comes
    /// through the mailbox later, after whatever was posted before it.
    func stopBy(_ request: UInt32, _ code: StatusCode) {
      call.stopTakingRequests(after: request, status: RPCError(code: code, message: "").status)
    }

    func halfClose() {
      call.end(with: CallStatus(code: StatusCode.ok.rawValue), output: record)
    }

    private func record(_ output: PipelinedCall.Output) {
      switch output {
      case .response(let bytes): sent.append(.response(bytes[0]))
      case .end(let status): sent.append(.end(status.code))
      }
    }
  }

  /// A success posted before the failure of the same request (a handler answering twice)
  /// counts, and the call goes on when no request came while it was stopped.
  @Test func aSecondAnswerThatFailsChangesNothingWhenNoRequestWasTurnedAway() {
    let call = Recorder()
    call.receive(1)
    call.stopBy(0, .aborted)
    call.succeed(0)
    call.fail(0, .aborted)
    #expect(call.receive(1) == [true])
    call.succeed(1)
    call.halfClose()
    #expect(call.sent == [.response(0), .response(1), .end(StatusCode.ok.rawValue)])
  }

  /// Requests turned away while the call was stopped cannot be answered in their turn: the
  /// call ends with the failure's status after the requests numbered before — also when the
  /// client half-closed meanwhile, whose OK would leave them unanswered.
  @Test(arguments: [false, true]) func requestsTurnedAwayEndTheCallWithTheFailure(halfClosed: Bool) {
    let call = Recorder()
    call.receive(2)
    call.stopBy(0, .aborted)
    #expect(call.receive(1) == [false])
    if halfClosed { call.halfClose() }
    call.succeed(0)
    call.fail(0, .aborted)
    call.succeed(1)
    #expect(call.sent == [.response(0), .response(1), .end(StatusCode.aborted.rawValue)])
  }

  /// A later request's failure, taken before the double answer of an earlier one, keeps its
  /// place: the call ends there, with its status, not later (the end never moves later).
  @Test func anEndAlreadySetIsNotMovedLater() {
    let call = Recorder()
    call.receive(5)
    call.stopBy(4, .resourceExhausted)
    call.fail(4, .resourceExhausted)
    call.stopBy(0, .aborted)  // request 0's second answer, on the loop, its first still posted
    call.succeed(0)
    call.fail(0, .aborted)
    for request: UInt32 in 1...3 { call.succeed(request) }
    #expect(call.sent == [.response(0), .response(1), .response(2), .response(3), .end(StatusCode.resourceExhausted.rawValue)])
  }

  /// An earlier request's failure, then the double answer of another, then a late success of
  /// the failed one: nothing is sent past the failure, whose status ends the call.
  @Test func nothingIsSentPastAFailedRequest() {
    let call = Recorder()
    call.receive(3)
    call.fail(1, .unavailable)
    call.stopBy(0, .aborted)
    call.succeed(0)
    call.fail(0, .aborted)
    call.succeed(1)
    call.succeed(2)
    #expect(call.sent == [.response(0), .end(StatusCode.unavailable.rawValue)])
  }
}
