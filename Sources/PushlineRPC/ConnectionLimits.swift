public import PushlineSchema

/// The limits of one connection: each the smaller of what the two peers announced.
public struct ConnectionLimits: Hashable, Sendable {
  /// The largest frame payload, in bytes.
  public var maxFrameSize: Int
  /// The largest message, in bytes, after decompression.
  public var maxMessageSize: Int
  /// How many calls may be open at once.
  public var maxConcurrentCalls: Int

  /// Protocol defaults: 1 MiB frames, 4 MiB messages, 100 concurrent calls.
  public static let defaults = ConnectionLimits(maxFrameSize: 1 << 20, maxMessageSize: 4 << 20, maxConcurrentCalls: 100)

  /// Limits with the given values.
  public init(maxFrameSize: Int, maxMessageSize: Int, maxConcurrentCalls: Int) {
    self.maxFrameSize = maxFrameSize
    self.maxMessageSize = maxMessageSize
    self.maxConcurrentCalls = maxConcurrentCalls
  }

  /// These limits as announced in a handshake.
  public var announced: Limits {
    var limits = Limits()
    limits.maxFrameSize = UInt32(clamping: maxFrameSize)
    limits.maxMessageSize = UInt32(clamping: maxMessageSize)
    limits.maxConcurrentCalls = UInt32(clamping: maxConcurrentCalls)
    return limits
  }

  /// The effective limits of a connection between a peer with these limits and one that
  /// announced `peer` (absent values meaning the protocol defaults).
  public func agreed(with peer: Limits?) -> ConnectionLimits {
    let defaults = Self.defaults
    return ConnectionLimits(
      maxFrameSize: min(maxFrameSize, peer?.maxFrameSize.map(Int.init) ?? defaults.maxFrameSize),
      maxMessageSize: min(maxMessageSize, peer?.maxMessageSize.map(Int.init) ?? defaults.maxMessageSize),
      maxConcurrentCalls: min(maxConcurrentCalls, peer?.maxConcurrentCalls.map(Int.init) ?? defaults.maxConcurrentCalls)
    )
  }
}
