/// Writes protobuf wire elements backwards into memory sized exactly beforehand.
///
/// Messages are encoded in two passes: ``WireMessage/encodedSize()`` computes the exact size
/// once, bottom-up; one buffer of that size is allocated; and ``WireMessage/encode(to:)``
/// fills it from the end toward the start, last field first. Writing backwards means a
/// sub-message's length is known as soon as its fields are written — the distance the cursor
/// moved — so no sub-message is ever sized twice (a forward writer must size each nested
/// message again at every level, which is quadratic in depth).
///
/// Every `write` call therefore places its bytes immediately *before* what was written
/// previously: to emit a tag and then a value, write the value first. The writer does not
/// check bounds in release builds — the size pass is the contract, and
/// ``WireMessage/serializedBytes()`` verifies it at the end.
public struct WireWriter: ~Copyable {
  @usableFromInline let start: UnsafeMutableRawPointer
  @usableFromInline var cursor: UnsafeMutableRawPointer

  /// Creates a writer that fills `buffer` from its end.
  @inlinable
  public init(_ buffer: UnsafeMutableRawBufferPointer) {
    // An empty buffer may have no base address; any non-nil pointer works for zero bytes.
    start = buffer.baseAddress ?? UnsafeMutableRawPointer(bitPattern: 0x10)!
    cursor = start + buffer.count
  }

  /// Bytes left before the start of the buffer.
  @inlinable
  public var remainingCapacity: Int { cursor - start }

  /// Writes one byte — a one-byte tag, a bool, a small varint.
  @inlinable @inline(__always)
  public mutating func writeByte(_ byte: UInt8) {
    assert(cursor > start, "encodedSize() is smaller than what encode(to:) writes")
    cursor -= 1
    cursor.storeBytes(of: byte, as: UInt8.self)
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
    let size = Varint.size(of: value)
    assert(cursor - start >= size, "encodedSize() is smaller than what encode(to:) writes")
    cursor -= size
    var v = value
    var index = 0
    while v >= 0x80 {
      cursor.storeBytes(of: UInt8(truncatingIfNeeded: v) | 0x80, toByteOffset: index, as: UInt8.self)
      v >>= 7
      index &+= 1
    }
    cursor.storeBytes(of: UInt8(truncatingIfNeeded: v), toByteOffset: index, as: UInt8.self)
  }

  /// Writes a signed 64-bit value as a plain varint (ten bytes when negative): int64, int32, enum.
  @inlinable @inline(__always)
  public mutating func writeVarint(_ value: Int64) {
    writeVarint(UInt64(bitPattern: value))
  }

  /// Writes four little-endian bytes (fixed32, float).
  @inlinable @inline(__always)
  public mutating func writeFixed32(_ value: UInt32) {
    assert(cursor - start >= 4, "encodedSize() is smaller than what encode(to:) writes")
    cursor -= 4
    cursor.storeBytes(of: value.littleEndian, as: UInt32.self)
  }

  /// Writes eight little-endian bytes (fixed64, double).
  @inlinable @inline(__always)
  public mutating func writeFixed64(_ value: UInt64) {
    assert(cursor - start >= 8, "encodedSize() is smaller than what encode(to:) writes")
    cursor -= 8
    cursor.storeBytes(of: value.littleEndian, as: UInt64.self)
  }

  /// Writes bytes verbatim (unknown fields, pre-encoded values).
  @inlinable
  public mutating func writeRaw(_ bytes: UnsafeRawBufferPointer) {
    guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
    assert(cursor - start >= bytes.count, "encodedSize() is smaller than what encode(to:) writes")
    cursor -= bytes.count
    cursor.copyMemory(from: source, byteCount: bytes.count)
  }

  /// Writes a length prefix and the string's UTF-8 bytes.
  @inlinable
  public mutating func writeLengthDelimited(_ string: String) {
    let written: Void? = string.utf8.withContiguousStorageIfAvailable { writeRaw(UnsafeRawBufferPointer($0)) }
    if written == nil {
      for byte in string.utf8.reversed() { writeByte(byte) }
    }
    writeVarint(UInt64(truncatingIfNeeded: string.utf8.count))
  }

  /// Writes a length prefix and the bytes.
  @inlinable
  public mutating func writeLengthDelimited(_ bytes: [UInt8]) {
    bytes.withUnsafeBytes { writeRaw($0) }
    writeVarint(UInt64(truncatingIfNeeded: bytes.count))
  }

  /// Writes a sub-message: its fields, then (before them) its length.
  @inlinable
  public mutating func writeLengthDelimited<M: WireMessage>(_ message: M) {
    let end = cursor
    message.encode(to: &self)
    writeVarint(UInt64(truncatingIfNeeded: end - cursor))
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
    guard size > 0 else { return [] }  // an empty message (an OK status): no storage allocated
    return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
      var writer = WireWriter(UnsafeMutableRawBufferPointer(buffer))
      encode(to: &writer)
      precondition(writer.remainingCapacity == 0, "\(Self.protoName): encodedSize() disagrees with encode(to:)")
      initialized = size
    }
  }
}
