/// Compares a decoded string with the bytes it was decoded from.
@usableFromInline
enum UTF8Check {
  /// Whether `string`'s UTF-8 is exactly `bytes`, which holds only when no repair happened.
  @inlinable
  static func isSame(_ string: String, _ bytes: UnsafeRawBufferPointer) -> Bool {
    let same = string.utf8.withContiguousStorageIfAvailable { utf8 -> Bool in
      utf8.count == bytes.count
        && (utf8.isEmpty || memoryEqual(UnsafeRawPointer(utf8.baseAddress!), bytes.baseAddress!, utf8.count))
    }
    return same ?? string.utf8.elementsEqual(bytes)
  }

  @usableFromInline
  static func memoryEqual(_ lhs: UnsafeRawPointer, _ rhs: UnsafeRawPointer, _ count: Int) -> Bool {
    var index = 0
    while index &+ 8 <= count {
      if lhs.loadUnaligned(fromByteOffset: index, as: UInt64.self)
        != rhs.loadUnaligned(fromByteOffset: index, as: UInt64.self)
      {
        return false
      }
      index &+= 8
    }
    while index < count {
      if lhs.load(fromByteOffset: index, as: UInt8.self) != rhs.load(fromByteOffset: index, as: UInt8.self) {
        return false
      }
      index &+= 1
    }
    return true
  }
}
