public import PushlineWire

// Field writers for the hand-mapped messages: each emits a one-byte tag (every field number in
// the schema is below 16) followed by the value, or nothing when an optional field is absent.
// WireWriter fills backwards, so each writes the value first and the tag before it.
extension WireWriter {
  @inlinable @inline(__always)
  mutating func write(_ tag: UInt8, _ value: String) {
    writeLengthDelimited(value)
    writeByte(tag)
  }

  @inlinable @inline(__always)
  mutating func write(_ tag: UInt8, _ value: String?) {
    if let value { write(tag, value) }
  }

  @inlinable @inline(__always)
  mutating func write(_ tag: UInt8, _ value: [UInt8]?) {
    if let value {
      writeLengthDelimited(value)
      writeByte(tag)
    }
  }

  @inlinable @inline(__always)
  mutating func write(_ tag: UInt8, _ value: Double) {
    writeFixed64(value.bitPattern)
    writeByte(tag)
  }

  @inlinable @inline(__always)
  mutating func write(_ tag: UInt8, _ value: Double?) {
    if let value { write(tag, value) }
  }

  @inlinable @inline(__always)
  mutating func write(_ tag: UInt8, _ value: Float?) {
    if let value {
      writeFixed32(value.bitPattern)
      writeByte(tag)
    }
  }

  @inlinable @inline(__always)
  mutating func write(_ tag: UInt8, _ value: Bool) {
    writeByte(value ? 1 : 0)
    writeByte(tag)
  }

  @inlinable @inline(__always)
  mutating func write(_ tag: UInt8, _ value: Bool?) {
    if let value { write(tag, value) }
  }

  @inlinable @inline(__always)
  mutating func write(_ tag: UInt8, _ value: Int64?) {
    if let value {
      writeVarint(value)
      writeByte(tag)
    }
  }

  @inlinable @inline(__always)
  mutating func write(_ tag: UInt8, _ value: UInt32) {
    writeVarint(UInt64(value))
    writeByte(tag)
  }

  @inlinable @inline(__always)
  mutating func write(_ tag: UInt8, _ value: UInt32?) {
    if let value { write(tag, value) }
  }

  @inlinable @inline(__always)
  mutating func writeZigZag(_ tag: UInt8, _ value: Int64) {
    writeVarint(Varint.zigZag(value))
    writeByte(tag)
  }

  @inlinable @inline(__always)
  mutating func write<E: ProtoEnum>(_ tag: UInt8, _ value: E) {
    writeVarint(Int64(value.rawValue))
    writeByte(tag)
  }

  @inlinable @inline(__always)
  mutating func write<E: ProtoEnum>(_ tag: UInt8, _ value: E?) {
    if let value { write(tag, value) }
  }

  @inlinable @inline(__always)
  mutating func write<M: WireMessage>(_ tag: UInt8, _ value: M) {
    writeLengthDelimited(value)
    writeByte(tag)
  }

  @inlinable @inline(__always)
  mutating func write<M: WireMessage>(_ tag: UInt8, _ value: M?) {
    if let value { write(tag, value) }
  }

  /// A repeated message field, last element first (the writer fills its buffer from the end).
  /// By index rather than through `reversed()`, whose iterator reads each element through the
  /// array's `read` accessor: for a message of several fields, that allocated once per element
  /// (heaptrack, a subscriber's `TopicUpdate`).
  @inlinable
  mutating func write<M: WireMessage>(_ tag: UInt8, _ values: [M]) {
    var index = values.endIndex
    while index > values.startIndex {
      index -= 1
      write(tag, values[index])
    }
  }

  /// A packed repeated enum: one length-delimited run of varints.
  @inlinable
  mutating func writePacked<E: ProtoEnum>(_ tag: UInt8, _ values: [E]) {
    guard !values.isEmpty else { return }
    let end = remainingCapacity
    for value in values.reversed() { writeVarint(Int64(value.rawValue)) }
    writeVarint(UInt64(truncatingIfNeeded: end - remainingCapacity))
    writeByte(tag)
  }

  /// A packed repeated sint64.
  @inlinable
  mutating func writePackedZigZag(_ tag: UInt8, _ values: [Int64]) {
    guard !values.isEmpty else { return }
    let end = remainingCapacity
    for value in values.reversed() { writeVarint(Varint.zigZag(value)) }
    writeVarint(UInt64(truncatingIfNeeded: end - remainingCapacity))
    writeByte(tag)
  }
}
