import PushlineWire

/// Builds raw wire bytes by hand for tests, independently of the codec under test.
enum WireBytes {
  static func varint(_ value: UInt64) -> [UInt8] {
    var bytes: [UInt8] = []
    var v = value
    while v >= 0x80 {
      bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
      v >>= 7
    }
    return bytes + [UInt8(v)]
  }

  static func tag(_ number: Int, _ wireType: WireType) -> [UInt8] {
    varint(UInt64(number) << 3 | UInt64(wireType.rawValue))
  }

  static func varintField(_ number: Int, _ value: UInt64) -> [UInt8] {
    tag(number, .varint) + varint(value)
  }

  static func lengthDelimited(_ number: Int, _ payload: [UInt8]) -> [UInt8] {
    tag(number, .lengthDelimited) + varint(UInt64(payload.count)) + payload
  }

  static func string(_ number: Int, _ value: String) -> [UInt8] {
    lengthDelimited(number, Array(value.utf8))
  }

  static func double(_ number: Int, _ value: Double) -> [UInt8] {
    tag(number, .fixed64) + withUnsafeBytes(of: value.bitPattern.littleEndian, Array.init)
  }

  /// The three required fields of a TrackerCard.
  static func requiredCard(id: String = "c") -> [UInt8] {
    string(1, id) + double(2, 1) + varintField(3, 1)
  }
}
