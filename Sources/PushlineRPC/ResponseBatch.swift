public import PushlineWire

/// The responses a ``ResponseSource`` hands over in one pull, appended in their wire form —
/// MESSAGE frames of the stream's call — to the bytes its connection is about to send: a
/// response is encoded once, in place, with no array of its own and no trip of its own
/// through the transport.
public struct ResponseBatch {
  /// How the connection compresses a message of at least `threshold` bytes, when it agreed on
  /// compression.
  public struct Compression: Sendable {
    /// The smallest message worth compressing.
    public let threshold: Int
    /// The message, compressed.
    public let compress: @Sendable ([UInt8]) -> [UInt8]

    /// Compression of messages from `threshold` bytes with `compress`.
    public init(threshold: Int, compress: @escaping @Sendable ([UInt8]) -> [UInt8]) {
      self.threshold = threshold
      self.compress = compress
    }
  }

  /// The bytes the connection is about to send — the frames it held before, of every call,
  /// then these responses' — for the transport to take back once the source is done.
  public var frames: [UInt8] { encoded }
  @usableFromInline var encoded: [UInt8]
  @usableFromInline let callID: UInt32
  /// The longest MESSAGE payload the peer takes: a longer message is split into frames.
  @usableFromInline let maxPayloadLength: Int
  /// The largest message the peer takes (the limit its handshake agreed).
  @usableFromInline let maxMessageSize: Int
  @usableFromInline var oversized: Int?
  @usableFromInline let compression: Compression?
  /// Whether the source said that the stream is complete.
  public private(set) var endsStream = false
  /// The size of the first response larger than the peer's message limit, which was left out:
  /// the peer would refuse it, so the transport ends the call instead (RESOURCE_EXHAUSTED).
  public var oversizedResponseSize: Int? { oversized }

  /// A batch of responses to `callID`, appended to `frames` (taken, and left empty: the
  /// transport takes the bytes back from ``frames``), for a peer that takes frames of
  /// `maxFrameSize` and messages of `maxMessageSize`.
  public init(callID: UInt32, maxFrameSize: Int, maxMessageSize: Int, compression: Compression?, appendingTo frames: inout [UInt8]) {
    encoded = frames
    frames = []  // one owner: appending copies nothing
    self.callID = callID
    maxPayloadLength = max(1, min(maxFrameSize, FrameHeader.maxPayloadLength))
    self.maxMessageSize = maxMessageSize
    self.compression = compression
  }

  /// Appends `message`, encoded straight into its frame when it fits one uncompressed; leaves
  /// it out, noting its size in ``oversizedResponseSize``, when the peer takes no message that
  /// large.
  @inlinable  // Specialised in the source's module: no generic dispatch per response.
  public mutating func append<Message: WireMessage>(_ message: Message) {
    let size = message.encodedSize()
    guard size <= maxMessageSize else { return noteOversized(size) }
    guard 1 + size <= maxPayloadLength, size < compression?.threshold ?? .max else {
      return append(serialized: message.serializedBytes())
    }
    FrameHeader(payloadLength: 1 + size, kind: .message, callID: callID).append(to: &encoded)
    encoded.append(0)  // not compressed
    let start = encoded.count
    encoded.append(contentsOf: repeatElement(0, count: size))
    encoded.withUnsafeMutableBytes { buffer in
      var writer = WireWriter(UnsafeMutableRawBufferPointer(rebasing: buffer[start...]))
      message.encode(to: &writer)
      precondition(writer.remainingCapacity == 0, "\(Message.protoName): encodedSize() disagrees with encode(to:)")
    }
  }

  /// Appends a response already encoded: compressed if the connection agreed on it and it is
  /// large enough, split if it is longer than a frame; left out, as ``append(_:)`` leaves it,
  /// when the peer takes no message that large.
  public mutating func append(serialized message: [UInt8]) {
    guard message.count <= maxMessageSize else { return noteOversized(message.count) }
    var bytes = message
    var compressed = false
    if let compression, message.count >= compression.threshold {
      bytes = compression.compress(message)
      compressed = true
    }
    for frame in MessageFraming.frames(for: bytes, compressed: compressed, callID: callID, maxFrameSize: maxPayloadLength) {
      frame.header.append(to: &encoded)
      encoded.append(contentsOf: frame.payload)
    }
  }

  /// Notes the first response left out for its size.
  @usableFromInline mutating func noteOversized(_ size: Int) {
    if oversized == nil { oversized = size }
  }

  /// Says that the stream is complete once the responses appended are sent: its call ends with
  /// OK.
  public mutating func endStream() {
    endsStream = true
  }
}
