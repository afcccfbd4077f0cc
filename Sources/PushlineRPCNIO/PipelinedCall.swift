import PushlineRPC

/// A pipelined call on the server (see `RPCRouter.registerPipelined`): its handler, which
/// takes each request as it arrives, and the order its answers must leave in — request order,
/// whatever order the handler answers in.
///
/// Used only on the connection's event loop.
final class PipelinedCall {
  /// The call's context, the same for each of its requests.
  let context: ServerContext
  /// The method's handler, called once per request.
  let handler: RPCRouter.CompletingHandler
  /// The client has half-closed the call: no more requests will come.
  var isHalfClosed = false
  /// The requests handed to the handler so far; the next one's number.
  private var received: UInt32 = 0
  /// The number of the request whose answer leaves next.
  private var nextToSend: UInt32 = 0
  /// Answers that came before an earlier request's, by request number.
  private var early: [UInt32: [UInt8]] = [:]

  /// A pipelined call whose requests go to `handler`.
  init(context: ServerContext, handler: @escaping RPCRouter.CompletingHandler) {
    self.context = context
    self.handler = handler
  }

  /// Numbers the next request: the answer that carries this number answers it.
  func numberNextRequest() -> UInt32 {
    defer { received += 1 }
    return received
  }

  /// Takes the answer to request `request` and passes `send` every answer now due, in request
  /// order: this one, if every earlier request is answered, and the early answers it held
  /// back. A second answer to a request, or one to a request never received, is dropped.
  func answer(_ request: UInt32, with response: [UInt8], send: ([UInt8]) -> Void) {
    guard request >= nextToSend, request < received else { return }
    guard request == nextToSend else {
      if early[request] == nil { early[request] = response }
      return
    }
    send(response)
    nextToSend += 1
    while !early.isEmpty, let next = early.removeValue(forKey: nextToSend) {
      send(next)
      nextToSend += 1
    }
  }

  /// Whether the call is done: half-closed, with every request answered.
  var isComplete: Bool { isHalfClosed && nextToSend == received }
}

@available(*, unavailable)
extension PipelinedCall: Sendable {}
