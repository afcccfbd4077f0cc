import PushlineRPC

/// A stream's response as it came off the wire, inflated only once its consumer reaches it: the
/// responses a stream buffers (up to ``StreamCredit/pauseAt`` bytes) then hold what the server
/// sent, not what it inflates to — a deflated message can inflate a thousandfold, and one read
/// burst brings several megabytes.
@usableFromInline
struct ReceivedResponse: Sendable {
  /// The message's bytes as they came.
  @usableFromInline let bytes: [UInt8]
  /// The most the message may inflate to (the agreed message size); `nil` when it came
  /// uncompressed.
  let inflatedLimit: Int?

  init(bytes: [UInt8], inflatedLimit: Int? = nil) {
    self.bytes = bytes
    self.inflatedLimit = inflatedLimit
  }

  /// The message, inflated if it came compressed.
  ///
  /// - Throws: ``RPCError`` RESOURCE_EXHAUSTED when it would inflate past its limit, INTERNAL
  ///   when it is not a complete deflate stream.
  @usableFromInline
  func message() throws(RPCError) -> [UInt8] {
    guard let inflatedLimit else { return bytes }
    return try Deflate.decompress(bytes, limit: inflatedLimit)
  }
}
