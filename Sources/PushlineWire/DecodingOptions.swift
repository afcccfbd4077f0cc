/// The limits a decoder enforces, so that hostile input costs bounded time and memory.
public struct DecodingOptions: Hashable, Sendable {
  /// How many sub-messages (and unknown groups) may nest inside the top-level message.
  /// The default, 100, is swift-protobuf's and upb's; a deeper input fails with
  /// ``WireDecodingError/Code-swift.struct/nestingTooDeep``.
  public var maxDepth: Int
  /// The largest input accepted, in bytes. The default is 64 MiB; larger input fails with
  /// ``WireDecodingError/Code-swift.struct/messageTooLarge`` before a byte is parsed.
  /// Protobuf itself cannot describe lengths of 2 GiB or more.
  public var maxMessageSize: Int

  /// Creates options; the defaults suit messages read from the network.
  public init(maxDepth: Int = 100, maxMessageSize: Int = 64 << 20) {
    self.maxDepth = maxDepth
    self.maxMessageSize = maxMessageSize
  }
}
