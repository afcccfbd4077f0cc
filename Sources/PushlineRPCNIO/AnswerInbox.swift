import NIOCore
import PushlineRPC
import Synchronization

/// Where completing handlers' answers (see `RPCRouter.CompletingHandler`) reach a connection
/// from other threads: the answers that arrive while the connection's event loop is busy are
/// handed over in one job and leave in one flush — a commit that completes sixty publishes of
/// one connection costs one wake-up of its loop, not sixty.
final class AnswerInbox: Sendable {
  /// A call's answer: its response message, or the error that ends it.
  typealias Answer = (callID: UInt32, result: Result<[UInt8], RPCError>)

  private struct Pending {
    var answers: [Answer] = []
    var isScheduled = false
  }

  private let connection: NIOLoopBound<ServerConnectionHandler>
  private let pending = Mutex(Pending())

  /// An inbox delivering to `connection` on its event loop.
  init(connection: NIOLoopBound<ServerConnectionHandler>) {
    self.connection = connection
  }

  /// Hands `result` to the call `callID`: at once on the connection's loop, otherwise through
  /// the inbox.
  func answer(callID: UInt32, with result: Result<[UInt8], RPCError>) {
    if connection.eventLoop.inEventLoop {
      return connection.value.writeBurst { connection.value.answer(callID: callID, with: result) }
    }
    let schedules = pending.withLock { pending in
      pending.answers.append((callID, result))
      defer { pending.isScheduled = true }
      return !pending.isScheduled
    }
    guard schedules else { return }
    connection.eventLoop.execute { self.deliver() }
  }

  /// Writes every answer waiting, as one burst (on the loop).
  private func deliver() {
    let answers = pending.withLock { pending in
      pending.isScheduled = false
      defer { pending.answers = [] }
      return pending.answers
    }
    let handler = connection.value
    handler.writeBurst {
      for (callID, result) in answers { handler.answer(callID: callID, with: result) }
    }
  }
}
