import Testing

@testable import PushlineCLI
import PushlineText

@Suite("JSON parser")
struct JSONParserTests {
  @Test func numbersKeepTheirLiteralText() throws {
    #expect(try JSONParser.parse("[-9223372036854775808, 1.50, 2e-3]")
      == .array([.number("-9223372036854775808"), .number("1.50"), .number("2e-3")]))
  }

  @Test func escapesAndSurrogatePairsDecode() throws {
    #expect(try JSONParser.parse(#""a\n\u00e9\ud83d\ude00\/""#) == .string("a\né😀/"))
  }

  @Test func aSequenceGivesEachDocumentWithWhereItBegins() throws {
    let documents = try JSONParser.parseSequence(" {}\n[1]2 \"a\"\n")
    #expect(documents.map(\.offset) == [1, 4, 7, 9])
    #expect(documents.map(\.value) == [.object([]), .array([.number("1")]), .number("2"), .string("a")])
    #expect(try JSONParser.parseSequence(" \n").isEmpty)
    #expect {
      try JSONParser.parseSequence("{}\n{\"a\":}")
    } throws: { error in
      (error as? JSONParser.SyntaxError).map { [$0.offset, $0.documentOffset] } == [8, 3]
    }
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
