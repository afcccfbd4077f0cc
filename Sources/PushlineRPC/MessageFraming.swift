/// How a message travels in MESSAGE frames: its compressed flag and bytes, split into frames
/// no larger than the peer accepts, every frame but the last flagged ``continues``.
///
/// Messages may be larger than frames (4 MiB against 1 MiB by default) so that one large
/// message cannot hold a multiplexed connection's other calls behind it for longer than a
/// frame; the receiving side reassembles them with ``MessageReassembly``.
public enum MessageFraming {
  /// The MESSAGE frame flag saying that the message continues in the call's next MESSAGE frame.
  public static let continues: UInt8 = 0x01

  /// Hands `write` what carries `message` (already compressed if `compressed`) on `callID`:
  /// one ``ConnectionElement/message(callID:compressed:bytes:)`` when its flag and bytes fit a
  /// frame of `maxFrameSize` — the common case, with no payload assembled — otherwise its
  /// ``frames(for:compressed:callID:maxFrameSize:)``.
  public static func write(
    _ message: [UInt8], compressed: Bool, callID: UInt32, maxFrameSize: Int, to write: (ConnectionElement) -> Void
  ) {
    guard 1 + message.count > chunkSize(maxFrameSize) else {
      return write(.message(callID: callID, compressed: compressed, bytes: message))
    }
    for frame in frames(for: message, compressed: compressed, callID: callID, maxFrameSize: maxFrameSize) { write(.frame(frame)) }
  }

  /// The frames that carry `message` (already compressed if `compressed`) on `callID`, none
  /// with a payload longer than `maxFrameSize`.
  public static func frames(for message: [UInt8], compressed: Bool, callID: UInt32, maxFrameSize: Int) -> [Frame] {
    var payload = [UInt8]()
    payload.reserveCapacity(1 + message.count)
    payload.append(compressed ? 1 : 0)
    payload.append(contentsOf: message)
    let chunk = chunkSize(maxFrameSize)
    guard payload.count > chunk else { return [Frame(kind: .message, callID: callID, payload: payload)] }
    return stride(from: 0, to: payload.count, by: chunk).map { start in
      let end = min(start + chunk, payload.count)
      return Frame(kind: .message, flags: end < payload.count ? continues : 0, callID: callID, payload: Array(payload[start..<end]))
    }
  }

  /// The longest MESSAGE payload a peer that takes frames of `maxFrameSize` gets.
  private static func chunkSize(_ maxFrameSize: Int) -> Int {
    max(1, min(maxFrameSize, FrameHeader.maxPayloadLength))
  }
}

/// Reassembles the messages of a connection's calls from their MESSAGE frames (see
/// ``MessageFraming``), holding each call's unfinished message until its last frame arrives.
public struct MessageReassembly: Sendable {
  /// What a MESSAGE frame completed.
  public enum Outcome: Hashable, Sendable {
    /// The message continues in a later frame.
    case incomplete
    /// A whole message: its compressed flag and bytes (a slice of the payload they came in,
    /// not a copy).
    case complete(flag: UInt8, message: ArraySlice<UInt8>)
    /// The frames so far already exceed the message limit; the call's bytes were dropped.
    case tooLarge(bytes: Int)
    /// A frame with no compressed flag at all.
    case malformed
  }

  private var unfinished: [UInt32: [UInt8]] = [:]
  /// The bytes of the unfinished messages together, less their compressed flags: what they
  /// count against a budget of held request bytes, as a whole message counts its bytes alone.
  public private(set) var bufferedBytes = 0

  /// An empty reassembly.
  public init() {}

  /// Takes the next MESSAGE frame of a call; `limit` is the largest message accepted (the
  /// payloads together may be one byte longer: the compressed flag).
  public mutating func receive(_ frame: Frame, limit: Int) -> Outcome {
    let more = frame.flags & MessageFraming.continues != 0
    guard more || unfinished[frame.callID] != nil else {
      guard let flag = frame.payload.first else { return .malformed }
      guard frame.payload.count - 1 <= limit else { return .tooLarge(bytes: frame.payload.count - 1) }
      return .complete(flag: flag, message: frame.payload.dropFirst())
    }
    var bytes = unfinished.removeValue(forKey: frame.callID) ?? []
    bufferedBytes -= Self.messageBytes(bytes)
    bytes.append(contentsOf: frame.payload)
    guard bytes.count - 1 <= limit else { return .tooLarge(bytes: bytes.count - 1) }
    guard !more else {
      unfinished[frame.callID] = bytes
      bufferedBytes += Self.messageBytes(bytes)
      return .incomplete
    }
    guard let flag = bytes.first else { return .malformed }
    // Copied to its exact size: the array its frames were appended to may have up to twice
    // the capacity, which the held-request accounting would not see.
    return .complete(flag: flag, message: Array(bytes.dropFirst())[...])
  }

  /// ``bufferedBytes`` with `frame` added to its call's message.
  public func bufferedBytes(adding frame: Frame) -> Int {
    // Most messages come whole, with none unfinished: no lookup then.
    let before = unfinished.isEmpty ? [] : unfinished[frame.callID] ?? []
    return bufferedBytes - Self.messageBytes(before) + max(before.count + frame.payload.count - 1, 0)
  }

  /// The bytes of a message begun with `payloads`, less its compressed flag.
  private static func messageBytes(_ payloads: [UInt8]) -> Int {
    max(payloads.count - 1, 0)
  }

  /// Whether a message of `callID` has begun and not yet ended.
  public func isUnfinished(callID: UInt32) -> Bool {
    unfinished[callID] != nil
  }

  /// Forgets the unfinished message of a call that has ended.
  public mutating func discard(callID: UInt32) {
    bufferedBytes -= unfinished.removeValue(forKey: callID).map(Self.messageBytes) ?? 0
  }
}
