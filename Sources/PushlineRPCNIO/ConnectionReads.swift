import NIOCore

/// How much one wake-up of the event loop reads from a connection, server's and client's alike.
///
/// NIO's defaults (4 reads, receive buffers growing to 64 KiB) make a busy connection cost many
/// loop turns, each with its own flush; 16 reads into buffers growing to 256 KiB let one turn
/// take in a whole burst, answered by one flush (DESIGN.md measured 122k against 682k
/// messages/s for a fan-out server). A channel keeps its receive buffer between reads, so they
/// start small, and idle connections stay small; a busy one's grows with its reads. Small, but
/// at 512 bytes large enough for a client's first flight — preface, `ClientHello` with its
/// token, and the first calls sent with it: a flight split over two reads costs the frame
/// decoder a copy of the first part and the channel a larger buffer for the rest.
enum ConnectionReads {
  /// `ChannelOptions.maxMessagesPerRead`.
  static let maxMessagesPerRead: UInt = 16
  /// `ChannelOptions.recvAllocator`.
  static let receiveBuffers = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 256 << 10)
}
