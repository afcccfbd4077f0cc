import PushlineRPC
public import PushlineWire

/// The responses of a server-streaming call, decoded as they arrive.
///
/// Ends when the call ends with OK; throws ``RPCError`` with the call's status otherwise, or
/// INTERNAL for a response that does not decode.
public struct RPCResponseStream<Response: WireMessage>: AsyncSequence, Sendable {
  public typealias Element = Response

  /// The responses in the batches the connection hands over, one per read burst.
  @usableFromInline let raw: AsyncThrowingStream<[ReceivedResponse], any Error>
  /// Told of each batch taken, so that the connection reads on (``StreamCredit``).
  @usableFromInline let credit: StreamCredit

  init(raw: AsyncThrowingStream<[ReceivedResponse], any Error>, credit: StreamCredit) {
    self.raw = raw
    self.credit = credit
  }

  /// Iterates the responses, decoding each as it is reached.
  public struct AsyncIterator: AsyncIteratorProtocol {
    @usableFromInline var raw: AsyncThrowingStream<[ReceivedResponse], any Error>.AsyncIterator
    @usableFromInline let credit: StreamCredit
    @usableFromInline var batch: [ReceivedResponse] = []
    @usableFromInline var position = 0

    @usableFromInline init(raw: AsyncThrowingStream<[ReceivedResponse], any Error>.AsyncIterator, credit: StreamCredit) {
      self.raw = raw
      self.credit = credit
    }

    /// The next response, `nil` once the call has ended OK.
    ///
    /// - Throws: ``RPCError`` with the call's status, or INTERNAL for a response that does not decode.
    @inlinable  // Specialised in the caller's module: the decoding is not dispatched generically.
    public mutating func next() async throws -> Response? {
      while position == batch.count {
        guard let next = try await raw.next() else { return nil }
        credit.taken(next.reduce(0) { $0 + $1.bytes.count })
        (batch, position) = (next, 0)
      }
      position += 1
      return try Response.decodingResponse(batch[position - 1].message())
    }
  }

  /// An iterator over the responses.
  @inlinable
  public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(raw: raw.makeAsyncIterator(), credit: credit) }
}
