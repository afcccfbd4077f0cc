import Testing

@testable import PushlineCLI
import PushlineText

@Suite("Hex")
struct HexTests {
  @Test func decodesWithSeparatorsAndPrefix() {
    #expect(Hex.decode("0x0A 0b:FF\n00") == [0x0A, 0x0B, 0xFF, 0x00])
    #expect(Hex.decode("") == [])
  }

  @Test func rejectsOddLengthsAndNonHex() {
    #expect(Hex.decode("abc") == nil)
    #expect(Hex.decode("zz") == nil)
  }

  @Test func encodesLowercaseWithLeadingZeros() {
    #expect(Hex.encode([0x00, 0x0F, 0xA0], separator: " ") == "00 0f a0")
  }
}
