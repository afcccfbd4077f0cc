import PushlineSchema
import PushlineWire
import Testing

@Suite("Golden vectors")
struct GoldenVectorTests {
  static let names = GoldenMessages.all.map(\.name)

  static func message(_ name: String) -> any ReflectableMessage {
    GoldenMessages.all.first { $0.name == name }!.message
  }

  @Test("encoding matches the fixture byte for byte", arguments: names)
  func encodes(name: String) throws {
    #expect(Self.message(name).serializedBytes() == (try Fixture.bytes(name)))
  }

  @Test("decoding the fixture gives the message back", arguments: names)
  func decodes(name: String) throws {
    let expected = Self.message(name)
    let decoded = try type(of: expected).init(serializedBytes: try Fixture.bytes(name), options: DecodingOptions())
    #expect(decoded.isEqual(to: expected))
  }

  /// Every prefix of a vector either fails with a typed error or, when it ends on a field
  /// boundary, is a complete message that encodes back to exactly that prefix.
  @Test("every truncation is an error or a clean field boundary", arguments: names)
  func truncations(name: String) throws {
    let bytes = try Fixture.bytes(name)
    let type = type(of: Self.message(name))
    var failures = 0
    for length in 0..<bytes.count {
      let prefix = Array(bytes[..<length])
      do {
        let decoded = try type.init(serializedBytes: prefix, options: DecodingOptions())
        #expect(decoded.serializedBytes() == prefix, "prefix of \(length) bytes")
      } catch {
        failures += 1
        #expect(error.offset <= length)
      }
    }
    #expect(failures > 0)
  }
}

extension ReflectableMessage {
  /// Equality across an existential; values of different types are never equal.
  func isEqual(to other: any ReflectableMessage) -> Bool {
    guard let other = other as? Self else { return false }
    return self == other
  }
}
