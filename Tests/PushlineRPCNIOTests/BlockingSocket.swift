import Glibc

/// A plain blocking TCP socket to 127.0.0.1, for tests that watch what the kernel does with a
/// connection (a reset, an end of stream) rather than what a NIO channel makes of it.
/// Used by one thread at a time (a test hands it to a thread pool to block there).
final class BlockingSocket: @unchecked Sendable {
  /// A failed system call, with its `errno`.
  struct Failure: Error, Equatable {
    var call: String
    var errno: Int32
  }

  private let descriptor: Int32

  /// Connects to `port` on the loopback interface.
  init(port: Int) throws {
    descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw Failure(call: "socket", errno: errno) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else {
      let failure = Failure(call: "connect", errno: errno)
      close(descriptor)
      throw failure
    }
  }

  deinit { close(descriptor) }

  /// Sends all of `bytes`, without SIGPIPE: a peer that reset the connection makes it throw.
  func send(_ bytes: [UInt8]) throws {
    var offset = 0
    while offset < bytes.count {
      let sent = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
      guard sent > 0 else { throw Failure(call: "send", errno: errno) }
      offset += sent
    }
  }

  /// Shuts the sending side down: the peer reads an end of file, and may still answer.
  func shutDownSending() throws {
    guard shutdown(descriptor, Int32(SHUT_WR)) == 0 else { throw Failure(call: "shutdown", errno: errno) }
  }

  /// Everything the peer sends until it closes its side.
  func receiveUntilEndOfStream() throws -> [UInt8] {
    var received: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
      let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
      guard count >= 0 else { throw Failure(call: "recv", errno: errno) }
      if count == 0 { return received }
      received += chunk[..<count]
    }
  }
}
