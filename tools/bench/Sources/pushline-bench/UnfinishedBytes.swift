import NIOCore

/// The bytes of an operation that a read left unfinished, for a handler that splits its byte
/// stream in a plain loop over each read: copied out (so that the channel's pooled receive
/// buffer is reused) and joined by the next read's.
struct UnfinishedBytes {
  private var kept: ByteBuffer?

  /// `bytes` behind what the last read left unfinished, if anything.
  mutating func joined(_ bytes: ByteBuffer) -> ByteBuffer {
    guard var kept = kept.take() else { return bytes }
    var bytes = bytes
    kept.writeBuffer(&bytes)
    return kept
  }

  /// Keeps what is left of `bytes` for the next read.
  mutating func keep(_ bytes: inout ByteBuffer, allocator: ByteBufferAllocator) {
    guard bytes.readableBytes > 0 else { return }
    var copy = allocator.buffer(capacity: bytes.readableBytes)
    copy.writeBuffer(&bytes)
    kept = copy
  }
}
