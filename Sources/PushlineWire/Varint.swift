/// Sizes and transforms of protobuf's variable-length integers.
public enum Varint {
  /// The number of bytes `value` takes as a varint (1...10), computed without branches.
  @inlinable @inline(__always)
  public static func size(of value: UInt64) -> Int {
    let bits = 64 &- (value | 1).leadingZeroBitCount
    return (bits &* 9 &+ 64) >> 6
  }

  /// The size of a signed 32-bit value, which protobuf sign-extends to ten bytes when negative.
  @inlinable @inline(__always)
  public static func size(of value: Int32) -> Int {
    size(of: UInt64(bitPattern: Int64(value)))
  }

  /// The size of a signed 64-bit value encoded as a plain (not zigzag) varint.
  @inlinable @inline(__always)
  public static func size(of value: Int64) -> Int {
    size(of: UInt64(bitPattern: value))
  }

  /// Maps a signed value to an unsigned one so that small magnitudes stay small (sint64).
  @inlinable @inline(__always)
  public static func zigZag(_ value: Int64) -> UInt64 {
    UInt64(bitPattern: (value << 1) ^ (value >> 63))
  }

  /// The inverse of ``zigZag(_:)``.
  @inlinable @inline(__always)
  public static func unZigZag(_ value: UInt64) -> Int64 {
    Int64(bitPattern: (value >> 1) ^ (0 &- (value & 1)))
  }
}
