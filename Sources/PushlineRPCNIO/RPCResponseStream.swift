import PushlineRPC
public import PushlineWire

/// The responses of a server-streaming call, decoded as they arrive.
///
/// Ends when the call ends with OK; throws ``RPCError`` with the call's status otherwise, or
/// INTERNAL for a response that does not decode.
public struct RPCResponseStream<Response: WireMessage>: AsyncSequence, Sendable {
  public typealias Element = Response

  /// The responses in the batches the connection hands over, one per read burst.
  let raw: AsyncThrowingStream<[[UInt8]], any Error>

  /// Iterates the responses, decoding each as it is reached.
  public struct AsyncIterator: AsyncIteratorProtocol {
    var raw: AsyncThrowingStream<[[UInt8]], any Error>.AsyncIterator
    var batch: [[UInt8]] = []
    var position = 0

    /// The next response, `nil` once the call has ended OK.
    ///
    /// - Throws: ``RPCError`` with the call's status, or INTERNAL for a response that does not decode.
    public mutating func next() async throws -> Response? {
      while position == batch.count {
        guard let next = try await raw.next() else { return nil }
        (batch, position) = (next, 0)
      }
      position += 1
      do {
        return try Response(serializedBytes: batch[position - 1])
      } catch {
        throw RPCError(code: .internal, message: "a response does not decode: \(Response.protoName): \(error)")
      }
    }
  }

  /// An iterator over the responses.
  public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(raw: raw.makeAsyncIterator()) }
}
