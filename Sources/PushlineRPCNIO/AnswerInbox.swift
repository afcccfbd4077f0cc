import NIOCore
import PushlineRPC

/// Where completing handlers' answers (see `RPCRouter.CompletingHandler`) reach a connection:
/// from other threads through a ``LoopMailbox`` — the answers of a commit leave in one job and
/// one flush — and on the connection's loop at once, unless answers from elsewhere are still
/// on their way, which then go first: only a call's first answer counts.
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
    connection.value.writeBurst { connection.value.answer(callID: callID, with: result) }
  }
}
