import PushlineSchema
import PushlineWire
import Testing

typealias W = WireBytes

@Suite("Decoding semantics")
struct DecodingSemanticsTests {
  @Test func lastOccurrenceOfAScalarWins() throws {
    let bytes = W.requiredCard(id: "first") + W.string(1, "second") + W.double(2, 7) + W.varintField(6, 5) + W.varintField(6, 9)
    let card = try TrackerCard(serializedBytes: bytes)
    #expect(card.cardID == "second")
    #expect(card.priority == 7)
    #expect(card.expiresAt == 9)
  }

  @Test func occurrencesOfASubMessageMerge() throws {
    let first = W.lengthDelimited(1, W.string(1, "A") + W.string(2, "$1") + W.varintField(90, 1))
    let second = W.lengthDelimited(1, W.string(2, "$2") + W.string(5, "go") + W.varintField(91, 2))
    let bytes = W.requiredCard() + W.lengthDelimited(4, first) + W.lengthDelimited(4, second)
    let trips = try #require(try TrackerCard(serializedBytes: bytes).payload?.trackerRecentTripsCard)
    #expect(trips.title == "A")
    #expect(trips.formattedTotal == "$2")
    #expect(trips.callToAction == "go")
    #expect(trips.unknownFields.bytes == W.varintField(90, 1) + W.varintField(91, 2))
  }

  @Test func requiredFieldsAreCheckedAfterMerging() throws {
    let withoutTitle = W.lengthDelimited(4, W.lengthDelimited(1, W.string(2, "$1")))
    let withTitle = W.lengthDelimited(4, W.lengthDelimited(1, W.string(1, "T")))
    #expect(try TrackerCard(serializedBytes: W.requiredCard() + withoutTitle + withTitle).payload?.trackerRecentTripsCard?.title == "T")
    let error = #expect(throws: WireDecodingError.self) { try TrackerCard(serializedBytes: W.requiredCard() + withoutTitle) }
    #expect(error?.code == .missingRequiredField)
    #expect(error?.detail == "pushline.tracker.TrackerCard.payload.trackerRecentTripsCard.title")
  }

  @Test func missingRequiredFieldInARepeatedElementIsNamedByIndex() {
    let tier = W.varintField(1, 10)  // reward missing
    let bytes = W.string(1, "Q") + W.lengthDelimited(11, tier + W.lengthDelimited(2, W.string(1, "USD") + W.varintField(2, 2)))
      + W.lengthDelimited(11, tier)
    let error = #expect(throws: WireDecodingError.self) { try TrackerDxGyProgressCard(serializedBytes: bytes) }
    #expect(error?.detail == "pushline.tracker.TrackerDxGyProgressCard.tiers[1].reward")
  }

  @Test func repeatedFieldsAppendAcrossInterleavedOccurrences() throws {
    let tier = { (trips: UInt64) in
      W.lengthDelimited(11, W.varintField(1, trips) + W.lengthDelimited(2, W.string(1, "USD") + W.varintField(2, 0)))
    }
    let bytes = tier(1) + W.string(1, "Q") + tier(2) + W.varintField(3, 4) + tier(3)
    #expect(try TrackerDxGyProgressCard(serializedBytes: bytes).tiers.map(\.trips) == [1, 2, 3])
  }

  @Test func packedAndUnpackedRepeatedScalarsAreBothAccepted() throws {
    let packed = W.lengthDelimited(8, W.varint(Varint.zigZag(-3)) + W.varint(Varint.zigZag(4)))
    let bytes = W.string(1, "W") + W.varintField(8, Varint.zigZag(1)) + packed + W.varintField(8, Varint.zigZag(-2))
    let week = try TrackerWeeklyEarningsCard(serializedBytes: bytes)
    #expect(week.dailyMinorUnits == [1, -3, 4, -2])
    // Re-encoded canonically: one packed run.
    #expect(week.serializedBytes() == W.string(1, "W") + W.lengthDelimited(8, [2, 5, 8, 3]))
  }

  @Test func aKnownFieldWithTheWrongWireTypeIsKeptAsUnknown() throws {
    let wrong = W.varintField(1, 42)  // cardID is a string, sent as a varint
    let card = try TrackerCard(serializedBytes: wrong + W.requiredCard())
    #expect(card.cardID == "c")
    #expect(card.unknownFields.bytes == wrong)
    #expect(card.serializedBytes() == W.requiredCard() + wrong)
    let error = #expect(throws: WireDecodingError.self) { try TrackerCard(serializedBytes: wrong) }
    #expect(error?.code == .missingRequiredField)
  }

  @Test func anUndefinedEnumValueIsKeptAsUnknownAndReadsAsAbsent() throws {
    let card = try TrackerCard(serializedBytes: W.varintField(5, 9) + W.requiredCard())
    #expect(card.cardType == nil)
    #expect(card.unknownFields.bytes == W.varintField(5, 9))
    #expect(card.serializedBytes() == W.requiredCard() + W.varintField(5, 9))
    // A defined value after it wins and the unknown one is still kept.
    let later = try TrackerCard(serializedBytes: W.requiredCard() + W.varintField(5, 9) + W.varintField(5, 2))
    #expect(later.cardType == .bulletin)
    #expect(later.unknownFields.bytes == W.varintField(5, 9))
  }

  @Test func anUndefinedValueOfARequiredEnumLeavesItMissing() {
    let error = #expect(throws: WireDecodingError.self) { try AnswerValue(serializedBytes: W.varintField(1, 99)) }
    #expect(error?.code == .missingRequiredField)
  }

  @Test func undefinedValuesInAPackedEnumGoToUnknownFields() throws {
    let bytes = W.string(1, "q") + W.string(2, "f") + W.lengthDelimited(4, [1, 99, 2])
    let question = try Question(serializedBytes: bytes)
    #expect(question.dataTypes == [.phoneNumber, .phoneOTP])
    #expect(question.unknownFields.bytes == W.varintField(4, 99))
  }

  @Test func paddedVarintsAreAcceptedAndReencodedCanonically() throws {
    let padded: [UInt8] = [0x98, 0x00, 0x81, 0x80, 0x80, 0x00]  // tag 3 in two bytes, value 1 in four
    let card = try TrackerCard(serializedBytes: W.string(1, "c") + W.double(2, 1) + padded)
    #expect(card.isValid)
    #expect(card.serializedBytes() == W.requiredCard())
    let tenBytes: [UInt8] = [0x30] + [UInt8](repeating: 0xFF, count: 9) + [0x01]
    #expect(try TrackerCard(serializedBytes: W.requiredCard() + tenBytes).expiresAt == -1)
  }

  @Test func thirtyTwoBitFieldsKeepTheLowBitsOfAWideVarint() throws {
    let bytes = W.string(1, "D") + W.varintField(4, (1 << 32) + 5)
    #expect(try TrackerDailyEarningsCard(serializedBytes: bytes).tripCount == 5)
  }

  @Test func anyNonZeroVarintIsTrue() throws {
    let card = try TrackerCard(serializedBytes: W.string(1, "c") + W.double(2, 1) + W.varintField(3, 1 << 40))
    #expect(card.isValid)
    #expect(card.serializedBytes() == W.requiredCard())
  }

  @Test func emptyInputIsAnEmptyMessage() throws {
    #expect(try TrackerCardPayload(serializedBytes: []) == TrackerCardPayload())
    let error = #expect(throws: WireDecodingError.self) { try TrackerCard(serializedBytes: []) }
    #expect(error?.detail == "pushline.tracker.TrackerCard.cardID")
  }

  @Test func inputOfOnlyUnknownFieldsRoundTrips() throws {
    let bytes = W.varintField(77, 1) + W.lengthDelimited(78, [1, 2]) + [0xF8, 0xFF, 0xFF, 0xFF, 0x0F, 0x00]
    let outage = try OutageState(serializedBytes: bytes)
    #expect(outage == OutageState(unknownFields: bytes))
    #expect(outage.serializedBytes() == bytes)
  }

  @Test func fieldsMayArriveInAnyOrder() throws {
    let payload = W.lengthDelimited(1, W.string(7, "uuid") + W.string(1, "T"))
    let bytes = W.double(10, 2) + W.varintField(9, 1) + W.varintField(6, 100) + W.lengthDelimited(4, payload)
      + W.varintField(5, 2) + W.varintField(3, 1) + W.double(2, 3) + W.string(1, "id")
    var expected = TrackerCard(cardID: "id", priority: 3, isValid: true)
    var trips = TrackerRecentTripsCard(title: "T")
    trips.lastTripUuid = "uuid"
    expected.payload = TrackerCardPayload()
    expected.payload?.trackerRecentTripsCard = trips
    expected.cardType = .bulletin
    expected.expiresAt = 100
    expected.shouldForceSwitchStatusMode = true
    expected.statusModePriority = 2
    #expect(try TrackerCard(serializedBytes: bytes) == expected)
  }
}

extension OutageState {
  init(unknownFields bytes: [UInt8]) {
    self.init()
    unknownFields = UnknownFields(bytes: bytes)
  }
}
