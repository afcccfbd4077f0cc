import Foundation
import PushlineSchema
import PushlineWire
import Testing

/// Where protobuf-c 1.4.1 departs from the protobuf specification, Pushline follows the
/// specification. Each vector shows both behaviours, so that a change on either side — a
/// protobuf-c upgrade or a Pushline regression — fails here.
@Suite("Expected divergences from protobuf-c", .serialized)
struct ExpectedDivergenceTests {
  static let card: [UInt8] = [0x0A, 0x01, 0x63, 0x11, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F, 0x18, 0x01]

  func protobufC(_ bytes: [UInt8], as type: String = TrackerCard.protoName) async throws -> Records.Result {
    let output = try await PeerHarness.protobufC(["roundtrip"], input: Records.encode([Records.Named(name: type, bytes: bytes)]))
    return try #require(try Records.decodeResults(output).first)
  }

  @Test func knownFieldWithTheWrongWireType() async throws {
    let bytes = Self.card + [0x30, 0x05, 0x35, 1, 2, 3, 4]  // expiresAt as VARINT, then as I32
    #expect(try TrackerCard(serializedBytes: bytes).unknownFields.bytes == [0x35, 1, 2, 3, 4])
    #expect(try await protobufC(bytes).unpacked == false)
  }

  @Test func unknownGroup() async throws {
    let bytes = Self.card + [0xA3, 0x06, 0xA8, 0x06, 0x01, 0xA4, 0x06]
    #expect(try TrackerCard(serializedBytes: bytes).serializedBytes() == bytes)
    #expect(try await protobufC(bytes).unpacked == false)
  }

  @Test func invalidUTF8() async throws {
    let bytes: [UInt8] = [0x0A, 0x02, 0xC0, 0xAF, 0x11, 0, 0, 0, 0, 0, 0, 0, 0, 0x18, 0x01]
    #expect(throws: WireDecodingError.self) { try TrackerCard(serializedBytes: bytes) }
    #expect(try await protobufC(bytes).unpacked == true)
  }

  @Test func embeddedNUL() async throws {
    let card = TrackerCard(cardID: "a\u{0}b", priority: 1, isValid: true)
    #expect(try TrackerCard(serializedBytes: card.serializedBytes()) == card)
    let result = try await protobufC(card.serializedBytes())
    #expect(result.unpacked)
    #expect(result.bytes == TrackerCard(cardID: "a", priority: 1, isValid: true).serializedBytes())
  }

  @Test func fieldNumberAboveTheMaximum() async throws {
    let bytes = Self.card + [0x80, 0x80, 0x80, 0x80, 0x10, 0x00]
    #expect(throws: WireDecodingError.self) { try TrackerCard(serializedBytes: bytes) }
    #expect(try await protobufC(bytes).unpacked == true)
  }

  @Test func nestingBeyondTheLimit() async throws {
    var question = Question(questionID: "q", flowID: "f")
    for _ in 0..<150 {
      var outer = Question(questionID: "q", flowID: "f")
      outer.alternates = [question]
      question = outer
    }
    #expect(throws: WireDecodingError.self) { try Question(serializedBytes: question.serializedBytes()) }
    #expect(try await protobufC(question.serializedBytes(), as: Question.protoName).bytes == question.serializedBytes())
  }

  @Test func undefinedClosedEnumValue() async throws {
    let bytes = Self.card + [0x28, 0x09, 0x30, 0x05]  // cardType 9, expiresAt 5
    #expect(try TrackerCard(serializedBytes: bytes).serializedBytes() == Self.card + [0x30, 0x05, 0x28, 0x09])
    #expect(try await protobufC(bytes).bytes == bytes)
  }

  @Test func undefinedValueInAPackedClosedEnum() async throws {
    let base = Question(questionID: "q", flowID: "f").serializedBytes()
    let bytes = base + [0x22, 0x03, 0x01, 0x63, 0x02]  // dataTypes [PHONE_NUMBER, 99, PHONE_OTP], packed
    #expect(try Question(serializedBytes: bytes).serializedBytes() == base + [0x22, 0x02, 0x01, 0x02, 0x20, 0x63])
    #expect(try await protobufC(bytes, as: Question.protoName).bytes == bytes)
  }
}
