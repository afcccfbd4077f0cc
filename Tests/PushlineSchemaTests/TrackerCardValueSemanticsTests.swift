import PushlineSchema
import PushlineWire
import Testing

/// `TrackerCard` keeps its fields in shared storage, copied when a copy changes: it must still
/// behave as a value in every way a caller can see.
@Suite("TrackerCard as a value")
struct TrackerCardValueSemanticsTests {
  @Test func changingACopyLeavesTheOriginalAsItWas() throws {
    let original = GoldenMessages.fullCard
    let originalBytes = original.serializedBytes()
    var copy = original
    copy.cardID = "changed"
    copy.payload?.trackerRecentTripsCard?.title = "Another trip"
    copy.expiresAt = nil
    copy.unknownFields = UnknownFields(bytes: [0xA0, 0x06, 0x07])
    #expect(original.cardID == "earnings/last-trip")
    #expect(original.payload?.trackerRecentTripsCard?.title == "Last trip")
    #expect(original.expiresAt == 1_763_830_800)
    #expect(original.serializedBytes() == originalBytes)
    #expect(copy != original)
    #expect(try TrackerCard(serializedBytes: copy.serializedBytes()) == copy)
  }

  @Test func decodingIntoACopyLeavesTheOriginalAsItWas() throws {
    let original = GoldenMessages.minimalCard
    var merged = original
    try WireBytes.string(1, "merged").withUnsafeBytes { try merged.merge(serializedBytes: $0) }
    #expect(merged.cardID == "merged")
    #expect(original.cardID == "a")
  }

  @Test func cardsBuiltApartWithTheSameFieldsAreEqualAndHashAlike() {
    let first = GoldenMessages.fullCard
    let second = GoldenMessages.fullCard
    #expect(first == second)
    #expect(Set([first, second]).count == 1)
    var different = second
    different.priority = 11
    #expect(first != different)
  }

  @Test func requiredFieldsAreTrackedThroughTheStorage() {
    var card = TrackerCard()
    #expect(card.missingRequiredField == "cardID")
    card.cardID = "a"
    let withID = card
    card.priority = 1
    card.isValid = false
    #expect(withID.missingRequiredField == "priority")
    #expect(card.missingRequiredField == nil)
  }
}
