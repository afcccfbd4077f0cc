public import PushlineWire

/// Writes the response messages of a server-streaming call.
public struct ResponseWriter<Response: WireMessage>: Sendable {
  @usableFromInline let sink: RPCRouter.ResponseSink

  /// Sends `response`, returning once the connection has taken it: at once while the
  /// connection's outbound buffer has room, suspending while it is full. A slow client makes
  /// the handler wait rather than the server's memory grow — and a handler that must not wait
  /// (a fan-out) can coalesce what it still has to send while this call is suspended.
  ///
  /// - Throws: ``RPCError`` CANCELLED once the call is over (the client cancelled or left).
  @inlinable  // Specialised in the handler's module: no generic dispatch per message.
  public func write(_ response: Response) async throws {
    try await sink.send(response.serializedBytes())
  }

  /// Hands the rest of the stream to `source`, which the transport then pulls from on its own
  /// executor whenever the returned pump is woken and the connection can take bytes — and,
  /// called on that executor, at once for what the source already holds, which may end the
  /// stream before this returns: no response costs a task switch. The handler should then return: if it returns normally, the
  /// call goes on until the source ends it (calls ``ResponseBatch/endStream()`` or throws in
  /// ``ResponseSource/nextResponses(into:)``); if it throws, the call ends with its error. Once
  /// per call: a second source ends the first one's stream. `nil` when the transport cannot;
  /// write with ``write(_:)`` then.
  public func pump(from source: some ResponseSource) -> (any ResponsePump)? {
    sink.pump?(source)
  }
}
