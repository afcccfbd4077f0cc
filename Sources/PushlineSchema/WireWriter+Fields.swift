public import PushlineWire

// Field writers for the hand-mapped messages: each writes a one-byte tag (every field number
// in the schema is below 16) and the value, or nothing when an optional field is absent.
extension WireWriter {
  @inlinable @inline(__always)
  mutating func write(_ tag: UInt8, _ value: String) {
    writeByte(tag)
    writeLengthDelimited(value)
  }

  @inlinable @inline(__always)
  mutating func write(_ tag: UInt8, _ value: String?) {
    if let value { write(tag, value) }
  }

  @inlinable @inline(__always)
  mutating func write(_ tag: UInt8, _ value: [UInt8]?) {
    if let value {
      writeByte(tag)
      writeLengthDelimited(value)
    }
  }

  @inlinable @inline(__always)
  mutating func write(_ tag: UInt8, _ value: Double) {
    writeByte(tag)
    writeFixed64(value.bitPattern)
  }

  @inlinable @inline(__always)
  mutating func write(_ tag: UInt8, _ value: Double?) {
    if let value { write(tag, value) }
  }

  @inlinable @inline(__always)
  mutating func write(_ tag: UInt8, _ value: Float?) {
    if let value {
      writeByte(tag)
      writeFixed32(value.bitPattern)
    }
  }

  @inlinable @inline(__always)
  mutating func write(_ tag: UInt8, _ value: Bool) {
    writeByte(tag)
    writeByte(value ? 1 : 0)
  }

  @inlinable @inline(__always)
  mutating func write(_ tag: UInt8, _ value: Bool?) {
    if let value { write(tag, value) }
  }

  @inlinable @inline(__always)
  mutating func write(_ tag: UInt8, _ value: Int64?) {
    if let value {
      writeByte(tag)
      writeVarint(value)
    }
  }

  @inlinable @inline(__always)
  mutating func write(_ tag: UInt8, _ value: UInt32) {
    writeByte(tag)
    writeVarint(UInt64(value))
  }

  @inlinable @inline(__always)
  mutating func write(_ tag: UInt8, _ value: UInt32?) {
    if let value { write(tag, value) }
  }

  @inlinable @inline(__always)
  mutating func writeZigZag(_ tag: UInt8, _ value: Int64) {
    writeByte(tag)
    writeVarint(Varint.zigZag(value))
  }

  @inlinable @inline(__always)
  mutating func write<E: ProtoEnum>(_ tag: UInt8, _ value: E) {
    writeByte(tag)
    writeVarint(Int64(value.rawValue))
  }

  @inlinable @inline(__always)
  mutating func write<E: ProtoEnum>(_ tag: UInt8, _ value: E?) {
    if let value { write(tag, value) }
  }

  @inlinable @inline(__always)
  mutating func write<M: WireMessage>(_ tag: UInt8, _ value: M) {
    writeByte(tag)
    writeLengthDelimited(value)
  }

  @inlinable @inline(__always)
  mutating func write<M: WireMessage>(_ tag: UInt8, _ value: M?) {
    if let value { write(tag, value) }
  }

  @inlinable
  mutating func write<M: WireMessage>(_ tag: UInt8, _ values: [M]) {
    for value in values { write(tag, value) }
  }

  /// A packed repeated enum: one length-delimited run of varints.
  @inlinable
  mutating func writePacked<E: ProtoEnum>(_ tag: UInt8, _ values: [E]) {
    guard !values.isEmpty else { return }
    writeByte(tag)
    writeVarint(UInt64(truncatingIfNeeded: WireSize.packedPayload(values)))
    for value in values { writeVarint(Int64(value.rawValue)) }
  }

  /// A packed repeated sint64.
  @inlinable
  mutating func writePackedZigZag(_ tag: UInt8, _ values: [Int64]) {
    guard !values.isEmpty else { return }
    writeByte(tag)
    writeVarint(UInt64(truncatingIfNeeded: WireSize.packedZigZagPayload(values)))
    for value in values { writeVarint(Varint.zigZag(value)) }
  }
}
