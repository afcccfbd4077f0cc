import NIOCore
import PushlineRPC
import PushlineSchema

/// A call handler's way back to its connection: it hands response messages and the final
/// status to the ``ServerConnectionHandler`` on the connection's event loop.
///
/// Handlers run with the event loop as their executor preference, so the common case is a
/// direct call on the loop: a response is written without a hop and ``send(_:)`` returns at
/// once. When the channel's buffer is full, ``send(_:)`` suspends until it drains; from any
/// other executor (a handler that detached), it hops to the loop first.
struct CallResponder: Sendable {
  /// What a write into a call that is over throws.
  static let callOver = RPCError(code: .cancelled, message: "the call is over")

  let connection: NIOLoopBound<ServerConnectionHandler>
  let callID: UInt32
  /// Whether the connection agreed on deflate: messages from ``Deflate/threshold`` bytes are
  /// then compressed, here in the handler's task.
  let compresses: Bool
  /// The largest message the peer takes (the limit its handshake agreed): a larger response
  /// ends the call with RESOURCE_EXHAUSTED instead.
  let maxMessageSize: Int
  /// Where the pulls of the call's pump, if it gets one, are scheduled.
  let pumps: PumpScheduler

  /// Sends one response message; the contract of ``RPCRouter/ResponseSink``.
  func send(_ message: [UInt8]) async throws {
    guard message.count <= maxMessageSize else { throw ServerConnectionHandler.oversized(message.count, limit: maxMessageSize) }
    let (bytes, compressed) = Deflate.prepare(message, negotiated: compresses)
    guard connection.eventLoop.inEventLoop else {
      return try await withCheckedThrowingContinuation { written in
        connection.eventLoop.execute { resolve(connection.value.send(bytes, compressed: compressed, callID: callID), written) }
      }
    }
    switch connection.value.send(bytes, compressed: compressed, callID: callID) {
    case .sent:
      return
    case .sentAndFlushed:
      await Task.yield()  // Let the loop read and serve its other channels before writing on.
    case .sentMustWait:
      try await withCheckedThrowingContinuation { connection.value.waitUntilWritable(callID: callID, $0) }
    case .callOver:
      throw Self.callOver
    }
  }

  /// Hands the call's responses to `source`, pulled on the loop when the returned pump is woken
  /// — and at once, on the loop, for what the source already holds (a subscription's snapshot),
  /// so that it leaves with the connection's pending writes.
  func pump(_ source: any ResponseSource) -> any ResponsePump {
    let pump = CallPump(connection: connection, callID: callID, compresses: compresses, source: source, scheduler: pumps)
    guard connection.eventLoop.inEventLoop else {
      connection.eventLoop.execute { [connection, callID] in connection.value.register(pump, callID: callID) }
      return pump
    }
    connection.value.register(pump, callID: callID)
    pump.pullIfReady()
    return pump
  }

  /// The handler returned with `status`, which ends the call unless a pump streams on; a
  /// unary one (`wasUnary`) makes room for the connection's next waiting call.
  func handlerReturned(status: CallStatus, wasUnary: Bool) {
    guard connection.eventLoop.inEventLoop else {
      return connection.eventLoop.execute { [connection, callID] in
        connection.value.handlerReturned(callID: callID, status: status, wasUnary: wasUnary)
      }
    }
    connection.value.handlerReturned(callID: callID, status: status, wasUnary: wasUnary)
  }

  /// Resumes `written` as `outcome` says: at once, after the channel drains, or with CANCELLED.
  private func resolve(_ outcome: ServerConnectionHandler.SendOutcome, _ written: CheckedContinuation<Void, any Error>) {
    switch outcome {
    case .sent, .sentAndFlushed: written.resume()
    case .sentMustWait: connection.value.waitUntilWritable(callID: callID, written)
    case .callOver: written.resume(throwing: Self.callOver)
    }
  }
}
