import PushlineRPC
public import PushlineWire
import Synchronization

/// A pipelined call (see `RPCRouter.registerPipelined`): many unary exchanges on one call, so
/// that a client sending request after request — a publisher — pays for no call's start and
/// end per request.
///
/// Send from any task, as many requests at once as you like: those past the server's window
/// of unanswered requests (`maxConcurrentCalls`, shared by the connection's pipelines) wait
/// on the client, in order, until answers make room. Each ``send(_:)`` returns its own
/// request's answer. Call ``finish()`` when done: the call then ends once every request is
/// answered. A pipeline dropped without ``finish()`` cancels its call. The method must be one
/// the server serves as pipelined: any other takes one request and refuses a second.
public final class RPCPipeline<Request: WireMessage, Response: WireMessage>: Sendable {
  private let connection: RPCConnection
  private let handle: RPCConnection.CallHandle
  private let isFinished = Atomic<Bool>(false)

  init(connection: RPCConnection, handle: RPCConnection.CallHandle) {
    self.connection = connection
    self.handle = handle
  }

  deinit {
    if !isFinished.load(ordering: .relaxed) { connection.cancel(handle) }
  }

  /// Sends `request` and returns its answer.
  ///
  /// Cancelling the calling task cancels the whole call, as for a unary call: the requests
  /// still unanswered fail with CANCELLED.
  /// - Throws: ``RPCError`` with the call's status when the call ends before answering;
  ///   FAILED_PRECONDITION once the pipeline is finished; INTERNAL for an answer that does not
  ///   decode.
  public func send(_ request: Request) async throws -> Response {
    guard !isFinished.load(ordering: .relaxed) else { throw PipelineWaiters.finished }
    return try await Response.decodingResponse(connection.send(request.serializedBytes(), on: handle))
  }

  /// Tells the server that no more requests come, and waits for the call's end: once every
  /// request sent is answered.
  /// - Throws: ``RPCError`` with the call's status when it does not end with OK.
  public func finish() async throws {
    isFinished.store(true, ordering: .relaxed)
    try await connection.finish(handle)
  }
}
