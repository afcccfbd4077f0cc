/// A message with a hand-written mapping to the protobuf binary format.
///
/// Conforming types are plain values. Their encode and decode are written by hand against
/// ``WireWriter`` and ``WireReader``; this protocol supplies the entry points
/// (``serializedBytes()``, ``init(serializedBytes:options:)-(UnsafeRawBufferPointer,_)``) around them.
///
/// Implementation requirements:
/// - ``encodedSize()`` returns exactly the number of bytes ``encode(to:)`` writes.
/// - ``encode(to:)`` produces known fields in ascending field number, then ``unknownFields``;
///   because ``WireWriter`` fills its buffer backwards, it makes its calls in the reverse
///   order: unknown fields first, then the fields from the highest number down, each value
///   before its tag.
/// - ``decodeFields(from:)`` reads until the reader's end, merging into `self` as protobuf
///   specifies: the last occurrence of a scalar wins, occurrences of a sub-message merge,
///   repeated fields append. A known field number with an unexpected wire type, and a closed
///   enum value the type does not define, go to ``unknownFields``. It does not check required
///   fields; ``missingRequiredField`` does, once the whole input is merged.
public protocol WireMessage: Hashable, Sendable {
  /// The fully qualified proto name, for example `pushline.tracker.TrackerCard`.
  static var protoName: String { get }

  /// Creates an empty message: optional fields absent, required fields at their defaults
  /// and not yet set, so ``missingRequiredField`` names the first of them.
  init()

  /// Fields this schema does not know, verbatim, re-emitted after the known fields.
  var unknownFields: UnknownFields { get set }

  /// The exact number of bytes ``encode(to:)`` writes.
  func encodedSize() -> Int

  /// Writes the message's fields (without a length prefix), backwards: see ``WireWriter``.
  func encode(to writer: inout WireWriter)

  /// Merges the fields read from `reader` up to its end into this message.
  mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError)

  /// The dotted path of the first `required` field that was never set, searching
  /// sub-messages too; `nil` when the message is complete.
  var missingRequiredField: String? { get }
}

extension WireMessage {
  /// Decodes a message, enforcing `options` and required fields.
  ///
  /// - Throws: ``WireDecodingError`` naming what is wrong and the byte offset where it starts.
  @inlinable  // Specialised for the message type where it is decoded: no generic dispatch.
  public init(serializedBytes bytes: UnsafeRawBufferPointer, options: DecodingOptions = DecodingOptions())
    throws(WireDecodingError)
  {
    self.init()
    try merge(serializedBytes: bytes, options: options)
    if let path = missingRequiredField {
      throw WireDecodingError(.missingRequiredField, at: bytes.count, detail: "\(Self.protoName).\(path)")
    }
  }

  /// Decodes a message from an array of bytes.
  @inlinable
  public init(serializedBytes bytes: [UInt8], options: DecodingOptions = DecodingOptions()) throws(WireDecodingError) {
    // Array.withUnsafeBytes is `rethrows`, which erases the error type; carry it in a Result.
    self = try bytes.withUnsafeBytes { buffer in
      Result { () throws(WireDecodingError) -> Self in try Self(serializedBytes: buffer, options: options) }
    }.get()
  }

  /// Decodes a message from part of an array of bytes, without copying it out (a request
  /// read as the payload of its frame, after the flag byte).
  @inlinable
  public init(serializedBytes bytes: ArraySlice<UInt8>, options: DecodingOptions = DecodingOptions()) throws(WireDecodingError) {
    self = try bytes.withUnsafeBytes { buffer in
      Result { () throws(WireDecodingError) -> Self in try Self(serializedBytes: buffer, options: options) }
    }.get()
  }

  /// Merges the fields in `bytes` into this message without checking required fields, as
  /// protobuf's `MergeFrom` does: concatenated encodings decode to the merged message.
  @inlinable
  public mutating func merge(serializedBytes bytes: UnsafeRawBufferPointer, options: DecodingOptions = DecodingOptions())
    throws(WireDecodingError)
  {
    guard bytes.count <= options.maxMessageSize else {
      throw WireDecodingError(.messageTooLarge, at: 0, detail: "\(bytes.count) bytes, limit \(options.maxMessageSize)")
    }
    var reader = WireReader(bytes, maxDepth: options.maxDepth)
    try decodeFields(from: &reader)
  }

  /// Whether every `required` field, in this message and its sub-messages, has been set.
  public var isInitialized: Bool { missingRequiredField == nil }
}
