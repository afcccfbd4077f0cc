import PushlineRPC
import PushlineSchema

/// A pipelined call on the server (see `RPCRouter.registerPipelined`): its handler, which
/// takes each request as it arrives, and the order its answers must leave in — request order,
/// whatever order the handler answers in — up to the status that ends the call.
///
/// Requests are numbered from 0 in arrival order, modulo 2³², so a call may live for any
/// number of them: the numbers in play at once are at most the window of unanswered requests.
///
/// Used only on the connection's event loop.
final class PipelinedCall {
  /// What the transport must do with an answer's consequences, in order.
  enum Output {
    /// Send this response.
    case response([UInt8])
    /// End the call with this status: every request before it is answered.
    case end(CallStatus)
  }

  /// The call's context, the same for each of its requests.
  let context: ServerContext
  /// The method's handler, called once per request.
  let handler: RPCRouter.CompletingHandler
  /// The requests handed to the handler so far; the next one's number.
  private var received: UInt32 = 0
  /// The number of the request whose answer leaves next.
  private var nextToSend: UInt32 = 0
  /// Answers that came before an earlier request's, by request number.
  private var early: [UInt32: [UInt8]] = [:]
  /// The status that ends the call once every request numbered before `at` is answered: an
  /// answer that failed (at its request's number), the client's half-close, the server's
  /// shutdown, or a stop whose request turned out answered (at the number of the next
  /// request). Requests after it go to no handler.
  private var ending: (at: UInt32, status: CallStatus)?
  /// A request failed on the loop, its answer still on its way: no request is taken after it
  /// (`turnedAway` says whether one came). Should that request's answer turn out a success
  /// given before the failure, the call goes on — or, if requests were turned away, ends with
  /// the failure's status.
  private var stopped: (request: UInt32, status: CallStatus, turnedAway: Bool)?

  /// A pipelined call whose requests go to `handler`.
  init(context: ServerContext, handler: @escaping RPCRouter.CompletingHandler) {
    self.context = context
    self.handler = handler
  }

  /// Numbers the next request, which the answer that carries this number answers; `nil`
  /// once the call is ending, or a request has failed on the loop before its answer's turn
  /// (``stopTakingRequests(after:status:)``), when the request goes unanswered.
  func numberNextRequest() -> UInt32? {
    guard ending == nil else { return nil }
    guard stopped == nil else {
      stopped?.turnedAway = true
      return nil
    }
    defer { received &+= 1 }
    return received
  }

  /// Request `request` has failed with `status`, its answer not yet taken: the requests after
  /// it go to no handler. The answer, when taken, ends the call after those before it. If a
  /// success given earlier comes first (a handler that answered twice: the first counts), the
  /// call goes on, unless the stop turned requests away: it then ends with `status` once the
  /// requests numbered so far are answered, so that those are not left waiting.
  func stopTakingRequests(after request: UInt32, status: CallStatus) {
    guard ending == nil, stopped == nil, request &- nextToSend < received &- nextToSend, early[request] == nil else { return }
    stopped = (request, status, false)
  }

  /// No more requests come: the call ends with `status` once those received are answered
  /// (or earlier, if an earlier answer has failed). Passes `output` the end if it is due now.
  func end(with status: CallStatus, output: (Output) -> Void) {
    guard ending == nil else { return }
    ending = (received, status)
    if nextToSend == received { output(.end(status)) }
  }

  /// Takes the answer to request `request` and passes `output` every answer now due, in
  /// request order — this one, if every earlier request is answered, and the early answers it
  /// held back — then the call's end if that is now due. A failed answer ends the call after
  /// the answers before it. A second answer to a request, or one to a request never received
  /// or after the call's end, is dropped.
  func answer(_ request: UInt32, with result: Result<[UInt8], RPCError>, output: (Output) -> Void) {
    // Distances from `nextToSend`, so that the numbers may wrap.
    let position = request &- nextToSend
    let limit = ending.map { $0.at &- nextToSend } ?? (received &- nextToSend)
    guard position < limit, early[request] == nil else { return }
    if let stop = stopped, stop.request == request {
      stopped = nil
      // An end set meanwhile stays, unless it would leave the turned-away requests after the
      // ones numbered ending OK (a half-close): an end never moves later.
      if case .success = result, stop.turnedAway, (ending?.at ?? received) == received { ending = (received, stop.status) }
    }
    switch result {
    case .failure(let error):
      // Requests from this one on go unanswered: the call ends when the earlier are answered.
      ending = (request, error.status)
      early = early.filter { $0.key &- nextToSend < position }
    case .success(let response) where position == 0:
      output(.response(response))
      nextToSend &+= 1
      while !early.isEmpty, let next = early.removeValue(forKey: nextToSend) {
        output(.response(next))
        nextToSend &+= 1
      }
    case .success(let response):
      early[request] = response
      return
    }
    if let ending, ending.at == nextToSend { output(.end(ending.status)) }
  }
}

@available(*, unavailable)
extension PipelinedCall: Sendable {}
