#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A TCP socket of this process, found by its descriptor: what the kernel says of it, whoever
/// opened it (a test's own server accepts its connections in-process).
struct OpenTCPSocket {
  /// The local and the peer's port.
  var localPort: Int
  var peerPort: Int
  /// Whether Nagle's algorithm is off (`IPPROTO_TCP`, `TCP_NODELAY`).
  var sendsWithoutDelay: Bool
  /// Whether `SO_DEBUG` is on: what `TCP_NODELAY`'s number sets at the socket level, and needs
  /// privileges to set.
  var isDebugging: Bool

  /// The connected IPv4 TCP sockets of this process with `port` at either end.
  static func connected(withPort port: Int) -> [OpenTCPSocket] {
    (0..<Int32(4096)).compactMap { descriptor in
      guard let local = Self.port(of: descriptor, getsockname), let peer = Self.port(of: descriptor, getpeername),
        local == port || peer == port, Self.option(descriptor, SOL_SOCKET, SO_TYPE) == streamType
      else { return nil }
      return OpenTCPSocket(
        localPort: local, peerPort: peer, sendsWithoutDelay: Self.option(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY) != 0,
        isDebugging: Self.option(descriptor, SOL_SOCKET, SO_DEBUG) != 0)
    }
  }

  #if canImport(Glibc)
    private static let streamType = Int32(SOCK_STREAM.rawValue)
  #else
    private static let streamType = SOCK_STREAM
  #endif

  private static func port(
    of descriptor: Int32, _ name: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32
  ) -> Int? {
    // Read as bytes, not through `sockaddr_in`'s fields: which C module owns that struct (the
    // C library's, or one of NIO's that includes the same header) depends on the order a clean
    // build loads them in, and NIO's is not a module for a test to import.
    var address = [UInt8](repeating: 0, count: 128)  // room for any address
    var length = socklen_t(address.count)
    let result = address.withUnsafeMutableBytes { raw in
      name(descriptor, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length)
    }
    guard result == 0, Self.family(of: address) == Int(AF_INET) else { return nil }
    return Int(UInt16(address[2]) << 8 | UInt16(address[3]))  // the port, in network order
  }

  /// The address family of a socket address's bytes.
  private static func family(of address: [UInt8]) -> Int {
    #if canImport(Darwin)
      Int(address[1])  // after its length byte
    #else
      Int(address.withUnsafeBytes { $0.load(as: UInt16.self) })  // in the host's order
    #endif
  }

  private static func option(_ descriptor: Int32, _ level: Int32, _ name: Int32) -> Int32? {
    var value: Int32 = 0
    var length = socklen_t(MemoryLayout<Int32>.size)
    return getsockopt(descriptor, level, name, &value, &length) == 0 ? value : nil
  }
}
