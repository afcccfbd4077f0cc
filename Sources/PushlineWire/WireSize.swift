/// Sizes of encoded wire elements, for ``WireMessage/encodedSize()`` implementations.
public enum WireSize {
  /// A length-delimited string: its length prefix plus its UTF-8 bytes.
  @inlinable @inline(__always)
  public static func lengthDelimited(_ string: String) -> Int {
    let count = string.utf8.count
    return Varint.size(of: UInt64(truncatingIfNeeded: count)) &+ count
  }

  /// A length-delimited byte string.
  @inlinable @inline(__always)
  public static func lengthDelimited(_ bytes: [UInt8]) -> Int {
    Varint.size(of: UInt64(truncatingIfNeeded: bytes.count)) &+ bytes.count
  }

  /// A length-delimited sub-message.
  @inlinable @inline(__always)
  public static func lengthDelimited<M: WireMessage>(_ message: M) -> Int {
    let size = message.encodedSize()
    return Varint.size(of: UInt64(truncatingIfNeeded: size)) &+ size
  }
}
