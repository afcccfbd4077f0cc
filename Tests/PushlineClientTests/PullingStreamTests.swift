import PushlineClient
import Synchronization
import Testing

/// `AsyncThrowingStream.pulling` buffers nothing: the upstream is advanced only as far as the
/// consumer has asked, so a transport's backpressure sees the consumer itself (`watch`'s
/// subscription relayed its whole stream into an unbounded buffer before).
@Suite("Pulled streams")
struct PullingStreamTests {
  @Test func theUpstreamIsAdvancedOnlyAsFarAsTheConsumerAsks() async throws {
    let pulled = Mutex(0)
    let upstream = AsyncStream<Int> { continuation in
      for value in 0..<100 { continuation.yield(value) }
      continuation.finish()
    }.map { value in
      pulled.withLock { $0 += 1 }
      return value
    }
    var stream = AsyncThrowingStream<Int, any Error>.pulling(upstream).makeAsyncIterator()
    for expected in 0..<3 { #expect(try await stream.next() == expected) }
    #expect(pulled.withLock { $0 } == 3)
  }
}
