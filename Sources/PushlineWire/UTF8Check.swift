/// Checks that string bytes are valid UTF-8 without paying for a second full validation, and
/// says where they are not: the decoder's errors, and tools naming a bad byte in their input,
/// point at the same place.
public enum UTF8Check {
  /// Whether every byte is below 0x80, eight bytes at a time (the last eight overlapping).
  @inlinable
  static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
    guard let base = bytes.baseAddress else { return true }
    let count = bytes.count
    let high: UInt64 = 0x8080_8080_8080_8080
    if count >= 8 {
      var index = 0
      while index &+ 8 < count {
        if base.loadUnaligned(fromByteOffset: index, as: UInt64.self) & high != 0 { return false }
        index &+= 8
      }
      return base.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self) & high == 0
    }
    var index = 0
    while index < count {
      if base.load(fromByteOffset: index, as: UInt8.self) >= 0x80 { return false }
      index &+= 1
    }
    return true
  }

  /// Where in `bytes` the first sequence that is not UTF-8 begins (overlong forms, surrogates,
  /// values past U+10FFFF, a sequence cut short), without building a string; `nil` when they
  /// are valid. ASCII is checked first, at once.
  public static func invalidOffset(_ bytes: UnsafeRawBufferPointer) -> Int? {
    if isASCII(bytes) { return nil }
    var iterator = bytes.makeIterator()
    var parser = Unicode.UTF8.ForwardParser()
    var offset = 0
    while true {
      switch parser.parseScalar(from: &iterator) {
      case .valid(let scalar): offset += scalar.count
      case .emptyInput: return nil
      case .error: return offset
      }
    }
  }

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
