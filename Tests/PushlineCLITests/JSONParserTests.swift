import Testing

@testable import PushlineCLI

@Suite("JSON parser")
struct JSONParserTests {
  @Test func numbersKeepTheirLiteralText() throws {
    #expect(try JSONParser.parse("[-9223372036854775808, 1.50, 2e-3]")
      == .array([.number("-9223372036854775808"), .number("1.50"), .number("2e-3")]))
  }

  @Test func escapesAndSurrogatePairsDecode() throws {
    #expect(try JSONParser.parse(#""a\n\u00e9\ud83d\ude00\/""#) == .string("a\né😀/"))
  }

  @Test("malformed documents are rejected with their offset", arguments: [
    ("[1,]", 3), ("{\"a\":1,}", 7), ("01", 0), ("\"\\ud800\"", 7), ("{\"a\":1,\"a\":2}", 7), ("[1] x", 4),
    ("\"tab\tinside\"", 4), ("", 0), ("nul", 0), (String(repeating: "[", count: 201), 200),
  ])
  func rejects(text: String, offset: Int) {
    #expect {
      try JSONParser.parse(text)
    } throws: { error in
      (error as? JSONParser.SyntaxError)?.offset == offset
    }
  }
}
