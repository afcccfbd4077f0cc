import PushlineSchema
import PushlineTesting
import PushlineWire
import Testing

@Suite("Malformed input")
struct MalformedInputTests {
  struct Vector: CustomTestStringConvertible, Sendable {
    var name: String
    var bytes: [UInt8]
    var code: WireDecodingError.Code
    var offset: Int
    var testDescription: String { name }
  }

  static let card = W.requiredCard()

  static let vectors: [Vector] = [
    Vector(name: "field number 0", bytes: card + [0x00, 0x01], code: .invalidFieldNumber, offset: 14),
    Vector(name: "wire type 6", bytes: card + [0x0E], code: .invalidWireType, offset: 14),
    Vector(name: "wire type 7", bytes: card + [0xFF, 0x01], code: .invalidWireType, offset: 14),
    Vector(name: "end group without start", bytes: card + [0x0C], code: .unmatchedGroup, offset: 14),
    Vector(name: "group closed by another field", bytes: card + [0xA3, 0x06, 0xAC, 0x06], code: .unmatchedGroup, offset: 16),
    Vector(name: "group never closed", bytes: card + [0xA3, 0x06, 0xA8, 0x06, 0x01], code: .truncated, offset: 14),
    Vector(name: "length past the end", bytes: [0x0A, 0x05, 0x61], code: .lengthOutOfRange, offset: 1),
    Vector(name: "length 2^31", bytes: [0x0A] + W.varint(1 << 31) + [0x61], code: .lengthOutOfRange, offset: 1),
    Vector(name: "length 2^63", bytes: [0x0A] + W.varint(1 << 63), code: .lengthOutOfRange, offset: 1),
    Vector(name: "truncated double", bytes: [0x0A, 0x00, 0x11, 0x00, 0x00], code: .truncated, offset: 3),
    Vector(name: "truncated varint", bytes: [0x0A, 0x00, 0x18, 0x80], code: .truncated, offset: 3),
    Vector(name: "truncated tag", bytes: [0x0A, 0x00, 0x80], code: .truncated, offset: 2),
    Vector(name: "11-byte varint", bytes: card + [0x30] + [UInt8](repeating: 0xFF, count: 10) + [0x01], code: .malformedVarint, offset: 15),
    Vector(name: "tag longer than 5 bytes", bytes: card + [0x80, 0x80, 0x80, 0x80, 0x80, 0x00], code: .malformedVarint, offset: 14),
    Vector(name: "field number 2^29", bytes: card + [0x80, 0x80, 0x80, 0x80, 0x10, 0x00], code: .invalidFieldNumber, offset: 14),
    Vector(name: "tag above 2^32", bytes: card + [0xF8, 0xFF, 0xFF, 0xFF, 0x7F, 0x00], code: .invalidFieldNumber, offset: 14),
    Vector(name: "error inside a sub-message", bytes: card + [0x22, 0x04, 0x0A, 0x02, 0x0A, 0x05], code: .lengthOutOfRange, offset: 19),
    Vector(name: "sub-message longer than its parent", bytes: card + [0x22, 0x02, 0x0A, 0x05, 0x61, 0x61, 0x61], code: .lengthOutOfRange, offset: 17),
    Vector(name: "overlong UTF-8", bytes: [0x0A, 0x02, 0xC0, 0xAF], code: .invalidUTF8, offset: 2),
    Vector(name: "UTF-8 surrogate", bytes: [0x0A, 0x03, 0xED, 0xA0, 0x80], code: .invalidUTF8, offset: 2),
    Vector(name: "UTF-8 above U+10FFFF", bytes: [0x0A, 0x04, 0xF4, 0x90, 0x80, 0x80], code: .invalidUTF8, offset: 2),
    Vector(name: "truncated UTF-8", bytes: [0x0A, 0x02, 0xE2, 0x82], code: .invalidUTF8, offset: 2),
    Vector(name: "truncated 4-byte UTF-8 before ASCII", bytes: [0x0A, 0x04, 0xF0, 0x90, 0x80, 0x41], code: .invalidUTF8, offset: 2),
    Vector(name: "UTF-8 0xFF", bytes: [0x0A, 0x01, 0xFF], code: .invalidUTF8, offset: 2),
    Vector(name: "0xFF after eight ASCII bytes", bytes: [0x0A, 0x09] + Array("abcdefgh".utf8) + [0xFF], code: .invalidUTF8, offset: 10),
    Vector(name: "0xFF among sixteen ASCII bytes", bytes: [0x0A, 0x11] + Array("abcdefgh".utf8) + [0xFF] + Array("abcdefgh".utf8),
           code: .invalidUTF8, offset: 10),
    Vector(name: "bad UTF-8 after a valid 2-byte scalar", bytes: [0x0A, 0x05, 0x61, 0xC3, 0xA9, 0xC3, 0x28], code: .invalidUTF8, offset: 5),
    Vector(name: "missing required field", bytes: [0x0A, 0x00, 0x18, 0x01], code: .missingRequiredField, offset: 4),
  ]

  @Test("each malformation yields its typed error and offset", arguments: vectors)
  func vector(_ vector: Vector) {
    let error = #expect(throws: WireDecodingError.self) { try TrackerCard(serializedBytes: vector.bytes) }
    #expect(error?.code == vector.code)
    #expect(error?.offset == vector.offset)
  }

  @Test func theLargestFieldNumberIsAccepted() throws {
    let bytes: [UInt8] = [0xF8, 0xFF, 0xFF, 0xFF, 0x0F, 0x00]
    #expect(try OutageState(serializedBytes: bytes).serializedBytes() == bytes)
  }

  @Test func nestingIsLimitedToTheDocumentedDepth() throws {
    func nested(_ depth: Int) -> Question {
      var question = Question(questionID: "q", flowID: "f")
      if depth > 0 { question.alternates = [nested(depth - 1)] }
      return question
    }
    let limit = DecodingOptions().maxDepth
    #expect(limit == 100)
    #expect(try Question(serializedBytes: nested(limit).serializedBytes()) == nested(limit))
    let error = #expect(throws: WireDecodingError.self) { try Question(serializedBytes: nested(limit + 1).serializedBytes()) }
    #expect(error?.code == .nestingTooDeep)
    #expect(try Question(serializedBytes: nested(10).serializedBytes(), options: DecodingOptions(maxDepth: 10)) == nested(10))
  }

  @Test func unknownGroupsCountTowardTheDepthLimit() throws {
    let group = { (depth: Int) -> [UInt8] in
      [UInt8](repeating: 0xA3, count: depth).flatMap { [$0, 0x06] } + [UInt8](repeating: 0xA4, count: depth).flatMap { [$0, 0x06] }
    }
    #expect(try OutageState(serializedBytes: group(100)).unknownFields.bytes == group(100))
    let error = #expect(throws: WireDecodingError.self) { try OutageState(serializedBytes: group(101)) }
    #expect(error?.code == .nestingTooDeep)
  }

  @Test func inputLargerThanTheLimitIsRefusedBeforeParsing() {
    let bytes = W.requiredCard()
    let error = #expect(throws: WireDecodingError.self) {
      try TrackerCard(serializedBytes: bytes, options: DecodingOptions(maxMessageSize: bytes.count - 1))
    }
    #expect(error?.code == .messageTooLarge)
  }

  @Test func aStringWithAnEmbeddedNULRoundTrips() throws {
    let card = TrackerCard(cardID: "a\u{0}b", priority: 0, isValid: true)
    #expect(try TrackerCard(serializedBytes: card.serializedBytes()).cardID == "a\u{0}b")
  }

  /// Flipping bits of valid messages: every result is a typed error or a message whose
  /// encoding decodes to itself — never a crash.
  @Test("random bit flips", arguments: GoldenMessages.all.map(\.name))
  func bitFlips(name: String) throws {
    let original = try Fixture.bytes(name)
    let type = type(of: GoldenMessages.all.first { $0.name == name }!.message)
    var rng = SplitMix64(seed: 0xB17F11B5)
    for _ in 0..<2_000 {
      var bytes = original
      for _ in 0...Int.random(in: 0..<3, using: &rng) {
        bytes[Int.random(in: 0..<bytes.count, using: &rng)] ^= 1 << UInt8.random(in: 0..<8, using: &rng)
      }
      Self.expectTotal(type, bytes)
    }
  }

  /// Random byte strings of every length up to 64, for every message type.
  @Test func randomGarbage() {
    var rng = SplitMix64(seed: 0x6A5BA6E)
    for type in MessageRegistry.all {
      for _ in 0..<2_000 {
        let bytes = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        Self.expectTotal(type, bytes)
      }
    }
  }

  static func expectTotal(_ type: any ReflectableMessage.Type, _ bytes: [UInt8]) {
    do {
      let decoded = try type.init(serializedBytes: bytes, options: DecodingOptions())
      let again = try type.init(serializedBytes: decoded.serializedBytes(), options: DecodingOptions())
      #expect(again.serializedBytes() == decoded.serializedBytes())
    } catch {
      #expect(error.offset >= 0 && error.offset <= bytes.count)
    }
  }
}
