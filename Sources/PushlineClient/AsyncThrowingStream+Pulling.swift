extension AsyncThrowingStream where Failure == any Error {
  /// `upstream`'s elements, each pulled from it only when this stream's consumer asks for the
  /// next: nothing is buffered between them, so a transport that holds its reading back while
  /// its consumer is behind (an ``RPCResponseStream``'s credit) sees how far behind the
  /// consumer really is. Ending the iteration ends the upstream's.
  public static func pulling<Upstream: AsyncSequence & Sendable>(_ upstream: Upstream) -> Self
  where Upstream.Element == Element {
    let iterator = PulledIterator(upstream.makeAsyncIterator())
    return AsyncThrowingStream(unfolding: { try await iterator.next() })
  }
}

/// An upstream iterator that ``AsyncThrowingStream/pulling(_:)`` advances. Unchecked: the
/// stream calls its closure for one element at a time, so the iterator is never advanced from
/// two tasks at once, though it moves between them.
private final class PulledIterator<Iterator: AsyncIteratorProtocol>: @unchecked Sendable {
  private var iterator: Iterator

  init(_ iterator: Iterator) {
    self.iterator = iterator
  }

  func next() async throws -> Iterator.Element? {
    try await iterator.next()
  }
}
