public import PushlineWire

// Sizes of whole fields (one-byte tag included), matching WireWriter+Fields.
extension WireSize {
  @inlinable @inline(__always)
  static func field(_ value: String) -> Int { 1 &+ lengthDelimited(value) }

  @inlinable @inline(__always)
  static func field(_ value: String?) -> Int { value.map(field) ?? 0 }

  @inlinable @inline(__always)
  static func field(_ value: [UInt8]?) -> Int { value.map { 1 &+ lengthDelimited($0) } ?? 0 }

  @inlinable @inline(__always)
  static func field(_ value: Double?) -> Int { value == nil ? 0 : 9 }

  @inlinable @inline(__always)
  static func field(_ value: Float?) -> Int { value == nil ? 0 : 5 }

  @inlinable @inline(__always)
  static func field(_ value: Bool?) -> Int { value == nil ? 0 : 2 }

  @inlinable @inline(__always)
  static func field(_ value: Int64?) -> Int { value.map { 1 &+ Varint.size(of: $0) } ?? 0 }

  @inlinable @inline(__always)
  static func field(_ value: UInt32) -> Int { 1 &+ Varint.size(of: UInt64(value)) }

  @inlinable @inline(__always)
  static func field(_ value: UInt32?) -> Int { value.map(field) ?? 0 }

  @inlinable @inline(__always)
  static func zigZagField(_ value: Int64) -> Int { 1 &+ Varint.size(of: Varint.zigZag(value)) }

  @inlinable @inline(__always)
  static func field<E: ProtoEnum>(_ value: E) -> Int { 1 &+ Varint.size(of: value.rawValue) }

  @inlinable @inline(__always)
  static func field<E: ProtoEnum>(_ value: E?) -> Int { value.map(field) ?? 0 }

  @inlinable @inline(__always)
  static func field<M: WireMessage>(_ value: M) -> Int { 1 &+ lengthDelimited(value) }

  @inlinable @inline(__always)
  static func field<M: WireMessage>(_ value: M?) -> Int { value.map(field) ?? 0 }

  @inlinable
  static func field<M: WireMessage>(_ values: [M]) -> Int {
    var size = 0
    for value in values { size &+= field(value) }
    return size
  }

  @inlinable
  static func packedPayload<E: ProtoEnum>(_ values: [E]) -> Int {
    var size = 0
    for value in values { size &+= Varint.size(of: value.rawValue) }
    return size
  }

  @inlinable
  static func packedField<E: ProtoEnum>(_ values: [E]) -> Int {
    guard !values.isEmpty else { return 0 }
    let payload = packedPayload(values)
    return 1 &+ Varint.size(of: UInt64(payload)) &+ payload
  }

  @inlinable
  static func packedZigZagPayload(_ values: [Int64]) -> Int {
    var size = 0
    for value in values { size &+= Varint.size(of: Varint.zigZag(value)) }
    return size
  }

  @inlinable
  static func packedZigZagField(_ values: [Int64]) -> Int {
    guard !values.isEmpty else { return 0 }
    let payload = packedZigZagPayload(values)
    return 1 &+ Varint.size(of: UInt64(payload)) &+ payload
  }
}
