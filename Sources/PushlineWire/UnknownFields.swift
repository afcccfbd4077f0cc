/// The encoded fields of a message that its schema does not know, kept verbatim.
///
/// Preserving them lets an older program relay, cache or re-encode a newer message without
/// losing data. They are re-emitted after the known fields, in the order they were read,
/// which is what protobuf's reference implementations do.
public struct UnknownFields: Hashable, Sendable {
  /// The raw bytes: complete tag–value pairs, concatenated.
  public private(set) var bytes: [UInt8]

  /// No unknown fields.
  public init() { bytes = [] }

  /// Unknown fields from bytes that already hold complete tag–value pairs.
  public init(bytes: [UInt8]) { self.bytes = bytes }

  /// Whether there are none.
  @inlinable
  public var isEmpty: Bool { bytes.isEmpty }

  /// Appends complete tag–value pairs.
  public mutating func append(_ raw: UnsafeRawBufferPointer) {
    bytes.append(contentsOf: raw)
  }

  /// Appends a varint field, as a decoder does for a closed-enum value it does not define.
  public mutating func appendVarint(_ value: UInt64, fieldNumber: Int) {
    let tag = UInt64(fieldNumber) << 3 | UInt64(WireType.varint.rawValue)
    let size = Varint.size(of: tag) + Varint.size(of: value)
    bytes.append(contentsOf: [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
      var writer = WireWriter(UnsafeMutableRawBufferPointer(buffer))
      writer.writeVarint(value)  // The writer fills backwards: the value, then the tag before it.
      writer.writeVarint(tag)
      initialized = size
    })
  }

  /// The number of bytes ``write(to:)`` writes.
  @inlinable
  public var encodedSize: Int { bytes.count }

  /// Writes the fields verbatim.
  @inlinable
  public func write(to writer: inout WireWriter) {
    if !bytes.isEmpty {
      bytes.withUnsafeBytes { writer.writeRaw($0) }
    }
  }
}
