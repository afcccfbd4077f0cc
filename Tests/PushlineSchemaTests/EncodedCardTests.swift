@testable import PushlineSchema
import PushlineTesting
import PushlineWire
import Testing

/// A card kept encoded must be judged exactly as a decoded one: the broker accepts and
/// rejects what a decode would, and forwards the very bytes it was sent.
@Suite struct EncodedCardTests {
  /// Decodes `bytes` as a change twice — card decoded and card kept encoded — and expects the
  /// same verdict: the same error code, or the same card, identifier and expiry.
  static func expectSameVerdict(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
    let decoded = Result { () throws(WireDecodingError) in try CardChange(serializedBytes: bytes) }
    let encoded = Result { () throws(WireDecodingError) in try EncodedCardChange(serializedBytes: bytes) }
    switch (decoded, encoded) {
    case (.success(let change), .success(let kept)):
      #expect(kept.cardID == change.cardID, sourceLocation: sourceLocation)
      #expect(kept.card?.cardID == change.card?.cardID, sourceLocation: sourceLocation)
      #expect(kept.card?.expiresAt == change.card?.expiresAt, sourceLocation: sourceLocation)
      // (Compared encoded: a random card may hold a NaN, which is not equal to itself.)
      #expect((try? kept.card?.decoded())?.serializedBytes() == change.card?.serializedBytes(), sourceLocation: sourceLocation)
    case (.failure(let error), .failure(let keptError)):
      #expect(keptError.code == error.code, "\(keptError) vs \(error)", sourceLocation: sourceLocation)
    case (.success, .failure(let error)):
      Issue.record("kept encoded, the change is refused (\(error)); decoded, it is accepted", sourceLocation: sourceLocation)
    case (.failure(let error), .success):
      Issue.record("kept encoded, the change is accepted; decoded, it is refused (\(error))", sourceLocation: sourceLocation)
    }
  }

  @Test func aCardKeptEncodedIsItsExactBytes() throws {
    var card = TrackerCard(cardID: "earnings/today", priority: 3, isValid: true)
    card.expiresAt = 1_763_830_800
    card.payload = TrackerCardPayload()
    card.payload?.trackerDailyEarningsCard = TrackerDailyEarningsCard(title: "Today — €182")
    let change = try EncodedCardChange(serializedBytes: CardChange(upserting: card, offset: 7).serializedBytes())
    let kept = try #require(change.card)
    #expect(kept.bytes == card.serializedBytes())
    #expect(kept.cardID == "earnings/today" && kept.expiresAt == 1_763_830_800 && kept.missingRequiredField == nil)
    #expect(try kept.decoded() == card)
    // Sent on, it is the same message as the decoded change would encode.
    #expect(change.serializedBytes() == CardChange(upserting: card, offset: 7).serializedBytes())
    #expect(EncodedCard(card) == kept)
  }

  @Test func completeCardsAreCheckedWithoutDecoding() {
    var generator = RandomMessageGenerator(seed: 0xC4D5)
    let shape = MessageShape.of(TrackerCard.self)
    for _ in 0..<500 {
      let bytes = generator.message(TrackerCard.self).serializedBytes()
      let certain = bytes.withUnsafeBytes { buffer in
        var reader = WireReader(buffer, maxDepth: DecodingOptions().maxDepth)
        return shape.certainlyDecodes(&reader)
      }
      #expect(certain)
    }
  }

  @Test func anIncompleteSubMessageIsJudgedByTheDecoder() throws {
    // A daily-earnings payload without its required title: the check cannot be sure (a later
    // occurrence could complete it), so the decode decides, and names the field.
    let untitled = WireBytes.requiredCard(id: "c") + WireBytes.lengthDelimited(4, WireBytes.lengthDelimited(2, []))
    let bytes = WireBytes.string(1, "c") + WireBytes.lengthDelimited(2, untitled)
    #expect(throws: WireDecodingError.self) { try EncodedCardChange(serializedBytes: bytes) }
    Self.expectSameVerdict(bytes)
    // A second occurrence of the card with the title completes it: occurrences merge.
    let title = WireBytes.lengthDelimited(4, WireBytes.lengthDelimited(2, WireBytes.string(1, "Today")))
    let split = bytes + WireBytes.lengthDelimited(2, title)
    let change = try EncodedCardChange(serializedBytes: split)
    #expect(try change.card?.decoded().payload?.trackerDailyEarningsCard?.title == "Today")
    Self.expectSameVerdict(split)
  }

  /// The check's promise, for every message of the schema: when it says an encoding
  /// certainly decodes, the decoder accepts it, required fields included.
  @Test func whatTheCheckAcceptsEveryDecoderAccepts() {
    func check<Message: ReflectableMessage>(_ type: Message.Type, _ generator: inout RandomMessageGenerator, _ rng: inout SplitMix64) {
      let shape = MessageShape.of(Message.self)
      for _ in 0..<40 {
        let original = generator.message(Message.self).serializedBytes()
        for corruption in 0..<25 {
          var bytes = original
          if corruption > 0, !bytes.isEmpty {
            bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
          }
          let certain = bytes.withUnsafeBytes { buffer in
            var reader = WireReader(buffer, maxDepth: DecodingOptions().maxDepth)
            return shape.certainlyDecodes(&reader)
          }
          if certain {
            #expect(throws: Never.self, "\(Message.self): \(bytes)") { try Message(serializedBytes: bytes) }
          }
        }
      }
    }
    var generator = RandomMessageGenerator(seed: 0x5A7E)
    var rng = SplitMix64(seed: 0xBADB17)
    for type in MessageRegistry.all { check(type, &generator, &rng) }
  }

  @Test func anUndefinedNumberDoesNotSetARequiredEnum() {
    // AnswerValue's dataType is a required closed enum; 0x63 is no DataType, so the decoder
    // keeps it as an unknown field and the message lacks dataType.
    let bytes = WireBytes.varintField(1, 0x63)
    #expect(throws: WireDecodingError.self) { try AnswerValue(serializedBytes: bytes) }
    let certain = bytes.withUnsafeBytes { buffer in
      var reader = WireReader(buffer, maxDepth: 8)
      return MessageShape.of(AnswerValue.self).certainlyDecodes(&reader)
    }
    #expect(!certain)
  }

  @Test func aCardInManyOccurrencesMergesAsTheDecoderDoes() throws {
    // The card field again and again in one change: each occurrence merges into the card
    // (here each sets cardType, then a last one the payload), read once each.
    var bytes = WireBytes.string(1, "c") + WireBytes.lengthDelimited(2, WireBytes.requiredCard(id: "c"))
    for index in 0..<2_000 {
      bytes += WireBytes.lengthDelimited(2, WireBytes.varintField(5, UInt64(index % 3)))
      bytes += [0x12, 0x00]  // an empty occurrence
    }
    bytes += WireBytes.lengthDelimited(2, WireBytes.varintField(6, 1_763_830_800))
    Self.expectSameVerdict(bytes)
    let change = try EncodedCardChange(serializedBytes: bytes)
    #expect(change.card?.expiresAt == 1_763_830_800)
    #expect(try change.card?.decoded() == CardChange(serializedBytes: bytes).card)
  }

  /// The broker's decoding of publishes is total: random bytes and corrupted publishes give a
  /// typed error inside the input, or a publish that encodes to bytes decoding to itself.
  @Test func decodingAPublishWithItsCardsEncodedIsTotal() {
    var generator = RandomMessageGenerator(seed: 0x70_7A1)
    var rng = SplitMix64(seed: 0xD1CE)
    func expectTotal(_ bytes: [UInt8]) {
      do {
        let request = try EncodedPublishRequest(serializedBytes: bytes)
        #expect(try EncodedPublishRequest(serializedBytes: request.serializedBytes()) == request)
      } catch {
        #expect(error.offset >= 0 && error.offset <= bytes.count)
      }
    }
    for _ in 0..<200 {
      let valid = generator.message(PublishRequest.self).serializedBytes()
      expectTotal(valid)
      for _ in 0..<10 where !valid.isEmpty {
        var bytes = valid
        bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= 1 << UInt8.random(in: 0..<8, using: &rng)
        expectTotal(bytes)
      }
      expectTotal((0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
    }
  }

  @Test func randomCardsAndTheirCorruptionsGetTheSameVerdict() {
    var generator = RandomMessageGenerator(seed: 0x5EED_CA2D)
    var rng = SplitMix64(seed: 0xF11B)
    for _ in 0..<400 {
      let original = CardChange(upserting: generator.message(TrackerCard.self), offset: 1).serializedBytes()
      Self.expectSameVerdict(original)
      for _ in 0..<10 {
        var bytes = original
        switch Int.random(in: 0..<3, using: &rng) {
        case 0: bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= 1 << UInt8.random(in: 0..<8, using: &rng)
        case 1: bytes.removeLast(Int.random(in: 1...bytes.count, using: &rng))
        default: bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
        }
        Self.expectSameVerdict(bytes)
      }
    }
  }
}
