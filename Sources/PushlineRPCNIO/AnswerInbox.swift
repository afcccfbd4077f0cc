import NIOCore
import PushlineRPC

/// Where completing handlers' answers (see `RPCRouter.CompletingHandler`) reach a connection:
/// through a ``LoopMailbox``, from any thread, the loop's own included. The answers of a commit
/// leave in one job and one flush, after what the connection's own streams have ready (see
/// ``ServerConnectionHandler/writeAnswers(_:)``), so a connection that also subscribes gets its
/// update before the answer to the publish that made it, even when the commit answered before
/// it woke the streams. A request's first answer counts (the mailbox keeps their order).
final class AnswerInbox: CallAnswerInbox {
  /// A request's answer: its response message, or the error that ends its call.
  typealias Answer = (callID: UInt32, requestIndex: UInt32, result: Result<[UInt8], RPCError>)

  private let mailbox: LoopMailbox<Answer>
  private let connection: NIOLoopBound<ServerConnectionHandler>

  /// An inbox delivering to `connection` on its event loop.
  init(connection: NIOLoopBound<ServerConnectionHandler>) {
    self.connection = connection
    mailbox = LoopMailbox(eventLoop: connection.eventLoop) { answers in
      let handler = connection.value
      handler.writeAnswers {
        for (callID, requestIndex, result) in answers { handler.answer(callID: callID, requestIndex: requestIndex, with: result) }
      }
    }
  }

  func answer(callID: UInt32, requestIndex: UInt32, with result: Result<[UInt8], RPCError>) {
    // A failure answered on the loop — usually by a pipelined call's handler refusing a request
    // as it arrives — stops the call's later requests at once, before the answer's turn comes:
    // those read in the same burst must go to no handler (2.6), not be applied unanswered.
    if case .failure(let error) = result, connection.eventLoop.inEventLoop {
      connection.value.stopTakingRequests(of: callID, after: requestIndex, status: error.status)
    }
    mailbox.post((callID, requestIndex, result))
  }
}
