import PushlineSchema
import PushlineText
import PushlineTesting
import PushlineWire
import Testing

@Suite("Round-trip properties")
struct RoundTripPropertyTests {
  static let types = MessageRegistry.all.map { TypeName($0) }

  struct TypeName: CustomTestStringConvertible, Sendable {
    let type: any ReflectableMessage.Type
    init(_ type: any ReflectableMessage.Type) { self.type = type }
    var testDescription: String { type.protoName }
  }

  /// Random messages encode to exactly `encodedSize()` bytes and decode to a message with
  /// the same encoding (bytes, not `==`, because NaN is not equal to itself).
  @Test("binary round trip", arguments: types)
  func binary(_ name: TypeName) throws {
    var random = RandomMessageGenerator(seed: 0x5EED_0001)
    for _ in 0..<300 {
      let message = random.message(of: name.type)
      let bytes = message.serializedBytes()
      #expect(message.encodedSize() == bytes.count)
      let decoded = try name.type.init(serializedBytes: bytes, options: DecodingOptions())
      let same = decoded.serializedBytes() == bytes
      #expect(same, "seed \(random.seed)")
    }
  }

  /// Protobuf JSON printed by `dump --json` parses back to the same message: the same JSON,
  /// and the same bytes unless a NaN's payload bits were lost (JSON has only "NaN").
  @Test("JSON round trip", arguments: types)
  func json(_ name: TypeName) throws {
    var options = RandomMessageGenerator.Options()
    options.unknownFields = false  // Unknown fields have no JSON form.
    var random = RandomMessageGenerator(seed: 0x5EED_0002, options: options)
    for _ in 0..<300 {
      let message = random.message(of: name.type)
      for pretty in [false, true] {
        let text = ProtoJSON.encode(message, pretty: pretty)
        let parsed = try ProtoJSON.decode(name.type, from: text)
        #expect(ProtoJSON.encode(parsed, pretty: pretty) == text)
        if !text.contains("\"NaN\"") {
          let same = parsed.serializedBytes() == message.serializedBytes()
          #expect(same, "\(text.prefix(2_000))")
        }
      }
    }
  }

  /// Concatenated encodings decode to the merged message, as protobuf specifies.
  @Test func concatenationMerges() throws {
    var random = RandomMessageGenerator(seed: 0x5EED_0003)
    for _ in 0..<300 {
      let first = random.message(TrackerCard.self)
      let second = random.message(TrackerCard.self)
      let merged = try TrackerCard(serializedBytes: first.serializedBytes() + second.serializedBytes())
      #expect(merged.cardID == second.cardID)
      #expect(merged.expiresAt == (second.expiresAt ?? first.expiresAt))
      #expect(merged.unknownFields.bytes == first.unknownFields.bytes + second.unknownFields.bytes)
      let firstTitle = first.payload?.trackerRecentTripsCard?.title
      let secondTitle = second.payload?.trackerRecentTripsCard?.title
      #expect(merged.payload?.trackerRecentTripsCard?.title == (secondTitle ?? firstTitle))
    }
  }
}
