import NIOCore
import PushlineRPC

/// Where completing handlers' answers (see `RPCRouter.CompletingHandler`) reach a connection:
/// from other threads through a ``LoopMailbox`` — the answers of a commit leave in one job and
/// one flush — and on the connection's loop at once (flushed with the turn's other writes),
/// unless answers from elsewhere are still on their way, which then go first: only a call's
/// first answer counts.
final class AnswerInbox: Sendable {
  /// A call's answer: its response message, or the error that ends it.
  typealias Answer = (callID: UInt32, result: Result<[UInt8], RPCError>)

  private let connection: NIOLoopBound<ServerConnectionHandler>
  private let mailbox: LoopMailbox<Answer>

  /// An inbox delivering to `connection` on its event loop.
  init(connection: NIOLoopBound<ServerConnectionHandler>) {
    self.connection = connection
    mailbox = LoopMailbox(eventLoop: connection.eventLoop) { answers in
      let handler = connection.value
      handler.writeBurst {
        for (callID, result) in answers { handler.answer(callID: callID, with: result) }
      }
    }
  }

  /// Hands `result` to the call `callID`.
  func answer(callID: UInt32, with result: Result<[UInt8], RPCError>) {
    guard connection.eventLoop.inEventLoop, !mailbox.hasPending else { return mailbox.post((callID, result)) }
    // Not a burst of its own: a commit on this loop answers many calls, and their frames leave
    // in the one flush the connection makes after the loop's current job (or its read).
    connection.value.answer(callID: callID, with: result)
  }
}
