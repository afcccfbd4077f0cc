import PushlineSchema
import PushlineWire
import Testing

@Suite("Encoding")
struct EncodingTests {
  static let card = W.requiredCard()

  @Test func negativeInt64IsATenByteVarint() {
    var outage = OutageState()
    outage.since = -1
    #expect(outage.serializedBytes() == [0x18] + [UInt8](repeating: 0xFF, count: 9) + [0x01])
  }

  static let boundaryCases: [(Int64, Int)] = [
    (127, 1), (128, 2), (16_383, 2), (16_384, 3), ((1 << 28) - 1, 4), (1 << 28, 5), ((1 << 35) - 1, 5), (1 << 35, 6),
    (Int64.max, 9), (Int64.min, 10),
  ]

  @Test("varint size boundaries", arguments: boundaryCases)
  func varintBoundaries(value: Int64, size: Int) throws {
    var outage = OutageState()
    outage.since = value
    let bytes = outage.serializedBytes()
    #expect(bytes == [0x18] + W.varint(UInt64(bitPattern: value)))
    #expect(bytes.count == 1 + size)
    #expect(try OutageState(serializedBytes: bytes).since == value)
  }

  static let doubleBits: [UInt64] = [
    (0.1 as Double).bitPattern, Double.greatestFiniteMagnitude.bitPattern, Double.leastNonzeroMagnitude.bitPattern,
    (-0.0 as Double).bitPattern, 0x7FF8_0000_0000_0123, 0xFFF0_0000_0000_0001, Double.infinity.bitPattern,
  ]

  @Test("doubles are bit-exact", arguments: doubleBits)
  func doubles(bits: UInt64) throws {
    let card = TrackerCard(cardID: "", priority: Double(bitPattern: bits), isValid: false)
    let bytes = card.serializedBytes()
    #expect(Array(bytes[3..<11]) == withUnsafeBytes(of: bits.littleEndian, Array.init))
    #expect(try TrackerCard(serializedBytes: bytes).priority.bitPattern == bits)
  }

  @Test func floatsAreBitExact() throws {
    var quest = TrackerDxGyProgressCard(title: "")
    quest.progress = Float(bitPattern: 0x7FC0_0001)
    let bytes = quest.serializedBytes()
    #expect(Array(bytes.suffix(5)) == [0x55, 0x01, 0x00, 0xC0, 0x7F])
    #expect(try TrackerDxGyProgressCard(serializedBytes: bytes).progress?.bitPattern == 0x7FC0_0001)
  }

  static let awkwardStrings: [String] = [
    "", "é", "😀", String(repeating: "a", count: 127), String(repeating: "a", count: 128),
    String(repeating: "ü", count: 64), String(repeating: "x", count: 16_384 + 1), "nul\u{0}inside", "\u{10FFFF}",
  ]

  @Test("strings of every awkward length and content", arguments: awkwardStrings)
  func strings(value: String) throws {
    let card = TrackerCard(cardID: value, priority: 0, isValid: false)
    let bytes = card.serializedBytes()
    #expect(Array(bytes.prefix(1 + W.varint(UInt64(value.utf8.count)).count + value.utf8.count))
      == W.string(1, value))
    #expect(try TrackerCard(serializedBytes: bytes).cardID == value)
  }

  @Test func aPresentEmptySubMessageIsATagAndZeroLength() {
    var card = TrackerCard(cardID: "c", priority: 1, isValid: true)
    card.payload = TrackerCardPayload()
    #expect(card.serializedBytes() == Self.card + [0x22, 0x00])
  }

  @Test("sub-messages of exactly 127 and 128 bytes", arguments: [127, 128])
  func subMessageLengthBoundary(size: Int) throws {
    // TrackerRecentTripsCard { title } is 2 + title bytes when the title is under 128 bytes.
    var card = TrackerCard(cardID: "c", priority: 1, isValid: true)
    card.payload = TrackerCardPayload()
    card.payload?.trackerRecentTripsCard = TrackerRecentTripsCard(title: String(repeating: "t", count: size - 2 - 2))
    let payloadBytes = card.payload!.serializedBytes()
    #expect(payloadBytes.count == size)
    #expect(card.serializedBytes() == Self.card + [0x22] + W.varint(UInt64(size)) + payloadBytes)
    #expect(try TrackerCard(serializedBytes: card.serializedBytes()) == card)
  }

  @Test func absentSectionsAreNotEncoded() {
    var payload = TrackerCardPayload()
    payload.trackerDxGyCompletionCard = TrackerDxGyCompletionCard(title: "Done")
    #expect(payload.serializedBytes() == W.lengthDelimited(5, W.string(1, "Done")))
  }

  @Test func unknownFieldsFollowKnownFieldsInTheirOriginalOrder() throws {
    let unknowns = W.varintField(200, 1) + W.lengthDelimited(150, [9]) + W.varintField(100, 2)
    let card = try TrackerCard(serializedBytes: W.varintField(200, 1) + W.string(1, "c") + W.lengthDelimited(150, [9])
      + W.double(2, 1) + W.varintField(100, 2) + W.varintField(3, 1))
    #expect(card.serializedBytes() == Self.card + unknowns)
  }

  @Test func requiredFieldsNeverSetAreEncodedWithTheirDefaults() {
    #expect(TrackerCard().serializedBytes() == W.string(1, "") + W.double(2, 0) + W.varintField(3, 0))
    #expect(!TrackerCard().isInitialized)
  }
}
