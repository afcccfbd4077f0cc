import PushlineWire
import Testing

@Suite("Varint")
struct VarintTests {
  /// The branch-free size agrees with the definition (7 bits a byte) at every bit width.
  @Test func sizeMatchesTheDefinitionAtEveryBitWidth() {
    for bits in 0...64 {
      for value in [bits == 0 ? 0 : UInt64(1) << (bits - 1), bits == 64 ? .max : (UInt64(1) << bits) &- 1] {
        var expected = 1
        var v = value >> 7
        while v > 0 {
          expected += 1
          v >>= 7
        }
        #expect(Varint.size(of: value) == expected, "\(value)")
      }
    }
  }

  @Test func negativeSignedValuesTakeTenBytes() {
    #expect(Varint.size(of: Int32(-1)) == 10)
    #expect(Varint.size(of: Int64.min) == 10)
    #expect(Varint.size(of: Int32.max) == 5)
  }

  @Test func zigZagMapsSmallMagnitudesToSmallValues() {
    let pairs: [(Int64, UInt64)] = [(0, 0), (-1, 1), (1, 2), (-2, 3), (Int64.max, .max - 1), (Int64.min, .max)]
    for (signed, unsigned) in pairs {
      #expect(Varint.zigZag(signed) == unsigned)
      #expect(Varint.unZigZag(unsigned) == signed)
    }
  }
}
