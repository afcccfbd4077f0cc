import PushlineSchema
@testable import PushlineText
import Testing

@testable import PushlineCLI

/// `bytes` fields in proto3 JSON: base64 in either alphabet, padded or not — and nothing else,
/// so that `pushline encode` never writes bytes its input did not say.
@Suite("encode: bytes as base64")
struct ProtoJSONBytesTests {
  static func blob(_ text: String) throws -> [UInt8]? {
    let value = try ProtoJSON.decode(AnswerValue.self, from: #"{"dataType":"EMAIL","blob":"\#(text)"}"#)
    return (value as? AnswerValue)?.blob
  }

  @Test(arguments: [
    ("AQID", [1, 2, 3]), ("AQI=", [1, 2]), ("AQI", [1, 2]), ("AQ==", [1]), ("AQ", [1]), ("", []),
    ("+/8=", [0xFB, 0xFF]), ("-_8", [0xFB, 0xFF]), ("-_8=", [0xFB, 0xFF]),
  ] as [(String, [UInt8])])
  func standardAndURLSafePaddedOrNot(text: String, bytes: [UInt8]) throws {
    #expect(try Self.blob(text) == bytes)
  }

  /// Padding inside the text (which Foundation on Linux decodes, to bytes no encoder wrote),
  /// too much of it, a lone last digit, the alphabets mixed, or a character of neither.
  @Test(arguments: ["AQ=B", "AQ=/", "AQ=a", "A===", "=AQ", "AQ==AQ==", "AQIDa", "AQI==", "AQ=", "+_8=", "AQ I", "AQ.D"])
  func anythingElseIsRefused(text: String) {
    #expect(throws: ProtoJSON.MappingError(path: "blob", message: "expected base64")) { try Self.blob(text) }
  }
}
