/// Writes protobuf wire elements into memory that the caller sized exactly beforehand.
///
/// Messages are encoded in two passes: ``WireMessage/encodedSize()`` computes the exact size,
/// one buffer of that size is allocated, and ``WireMessage/encode(to:)`` fills it through this
/// writer. The writer does not check bounds in release builds — the size pass is the contract
/// (``WireMessage/serializedBytes()`` verifies it at the end) — so it never grows or copies.
public struct WireWriter: ~Copyable {
  @usableFromInline var cursor: UnsafeMutableRawPointer
  @usableFromInline let end: UnsafeMutableRawPointer

  /// Creates a writer over `buffer`, which must be large enough for everything written.
  @inlinable
  public init(_ buffer: UnsafeMutableRawBufferPointer) {
    // An empty buffer may have no base address; any non-nil pointer works for zero bytes.
    let base = buffer.baseAddress ?? UnsafeMutableRawPointer(bitPattern: 0x10)!
    cursor = base
    end = base + buffer.count
  }

  /// Bytes left before the end of the buffer.
  @inlinable
  public var remainingCapacity: Int { end - cursor }

  /// Writes one byte — a one-byte tag, a bool, a small varint.
  @inlinable @inline(__always)
  public mutating func writeByte(_ byte: UInt8) {
    assert(cursor < end, "encodedSize() is smaller than what encode(to:) writes")
    cursor.storeBytes(of: byte, as: UInt8.self)
    cursor += 1
  }

  /// Writes `value` as a base-128 varint.
  @inlinable @inline(__always)
  public mutating func writeVarint(_ value: UInt64) {
    if value < 0x80 {
      writeByte(UInt8(truncatingIfNeeded: value))
    } else {
      writeVarintSlow(value)
    }
  }

  @usableFromInline
  mutating func writeVarintSlow(_ value: UInt64) {
    var v = value
    while v >= 0x80 {
      writeByte(UInt8(truncatingIfNeeded: v) | 0x80)
      v >>= 7
    }
    writeByte(UInt8(truncatingIfNeeded: v))
  }

  /// Writes a signed 64-bit value as a plain varint (ten bytes when negative): int64, int32, enum.
  @inlinable @inline(__always)
  public mutating func writeVarint(_ value: Int64) {
    writeVarint(UInt64(bitPattern: value))
  }

  /// Writes four little-endian bytes (fixed32, float).
  @inlinable @inline(__always)
  public mutating func writeFixed32(_ value: UInt32) {
    assert(end - cursor >= 4, "encodedSize() is smaller than what encode(to:) writes")
    cursor.storeBytes(of: value.littleEndian, as: UInt32.self)
    cursor += 4
  }

  /// Writes eight little-endian bytes (fixed64, double).
  @inlinable @inline(__always)
  public mutating func writeFixed64(_ value: UInt64) {
    assert(end - cursor >= 8, "encodedSize() is smaller than what encode(to:) writes")
    cursor.storeBytes(of: value.littleEndian, as: UInt64.self)
    cursor += 8
  }

  /// Writes bytes verbatim (unknown fields, pre-encoded values).
  @inlinable
  public mutating func writeRaw(_ bytes: UnsafeRawBufferPointer) {
    guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
    assert(end - cursor >= bytes.count, "encodedSize() is smaller than what encode(to:) writes")
    cursor.copyMemory(from: source, byteCount: bytes.count)
    cursor += bytes.count
  }

  /// Writes a length prefix and the string's UTF-8 bytes.
  @inlinable
  public mutating func writeLengthDelimited(_ string: String) {
    let count = string.utf8.count
    writeVarint(UInt64(truncatingIfNeeded: count))
    let copied: Void? = string.utf8.withContiguousStorageIfAvailable { writeRaw(UnsafeRawBufferPointer($0)) }
    if copied == nil {
      for byte in string.utf8 { writeByte(byte) }
    }
  }

  /// Writes a length prefix and the bytes.
  @inlinable
  public mutating func writeLengthDelimited(_ bytes: [UInt8]) {
    writeVarint(UInt64(truncatingIfNeeded: bytes.count))
    bytes.withUnsafeBytes { writeRaw($0) }
  }

  /// Writes a sub-message: its length, then its fields.
  @inlinable
  public mutating func writeLengthDelimited<M: WireMessage>(_ message: M) {
    writeVarint(UInt64(truncatingIfNeeded: message.encodedSize()))
    message.encode(to: &self)
  }
}

extension WireMessage {
  /// The message's wire bytes.
  ///
  /// Encoding cannot fail: every field present is written, `required` fields always (with
  /// their default value if never set), unknown fields last in the order they were read.
  @inlinable
  public func serializedBytes() -> [UInt8] {
    let size = encodedSize()
    return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
      var writer = WireWriter(UnsafeMutableRawBufferPointer(buffer))
      encode(to: &writer)
      precondition(writer.remainingCapacity == 0, "\(Self.protoName): encodedSize() disagrees with encode(to:)")
      initialized = size
    }
  }
}
