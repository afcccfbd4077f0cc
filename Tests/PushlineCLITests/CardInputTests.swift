import PushlineSchema
import PushlineText
import PushlineWire
import Testing

@testable import PushlineCLI

/// What `pushline publish` accepts as its cards, and how it names a problem's place.
@Suite("publish: reading cards")
struct CardInputTests {
  static func card(_ id: String, priority: Double = 1) -> TrackerCard {
    var card = TrackerCard(cardID: id, priority: priority, isValid: true)
    card.cardType = .browse
    return card
  }

  static func line(_ id: String) -> String { ProtoJSON.encode(card(id)) }

  @Test func jsonLinesSkipBlankLinesAndKeepTheirOrder() throws {
    let text = "\n\(Self.line("a"))\n\n  \n\(Self.line("b"))\r\n\(Self.line("c"))\n\n"
    #expect(try CardInput.cards(in: text) == [Self.card("a"), Self.card("b"), Self.card("c")])
  }

  /// Blank lines count: the card that does not map is named by the line it is on in the file.
  @Test func aCardThatDoesNotMapIsNamedByItsLineAfterBlankLines() {
    let text = "\(Self.line("a"))\n\n\n\(Self.line("b"))\n\n" + #"{"cardID":"c","priority":"high","isValid":true}"# + "\n"
    #expect(throws: CardInputError(position: .line(6), message: #"priority: expected a number"#)) {
      try CardInput.cards(in: text)
    }
  }

  @Test func aSyntaxErrorIsNamedByLineAndColumnAndWhereItsValueBegins() {
    // The third card lacks its closing brace: the parser finds out on the next line.
    let text = "\(Self.line("a"))\n\n" + #"{"cardID":"b","priority":1,"isValid":true"# + "\n\(Self.line("c"))\n"
    #expect(throws: CardInputError(
      position: .line(4), message: "invalid JSON at column 1: expected ',' or '}' (in the JSON value that begins on line 3)"
    )) {
      try CardInput.cards(in: text)
    }
  }

  /// What `pushline dump --json` prints publishes as it is.
  @Test func aPrettyPrintedCardAsDumpPrintsIt() throws {
    var card = Self.card("earnings/today", priority: 10.5)
    card.payload = TrackerCardPayload()
    card.payload?.trackerDailyEarningsCard = TrackerDailyEarningsCard(title: "Today")
    let dumped = try DumpCommand.render(card.serializedBytes(), as: TrackerCard.self, json: true)
    #expect(dumped.split(separator: "\n").count > 5)
    #expect(try CardInput.cards(in: dumped) == [card])
  }

  @Test func anArrayOfCardsPrettyOrNot() throws {
    let cards = [Self.card("a"), Self.card("b", priority: 2), Self.card("c", priority: 3)]
    let compact = "[" + cards.map { ProtoJSON.encode($0) }.joined(separator: ",") + "]"
    let pretty = "[\n" + cards.map { ProtoJSON.encode($0, pretty: true) }.joined(separator: ",\n") + "\n]\n"
    #expect(try CardInput.cards(in: compact) == cards)
    #expect(try CardInput.cards(in: pretty) == cards)
  }

  @Test func aCardOfAnArrayIsNamedByItsIndex() {
    let text = "[\n\(Self.line("a")),\n" + #"{"cardID":"b","priority":1}"# + "\n]"
    #expect(throws: CardInputError(position: .index(1), message: "missing required field isValid")) {
      try CardInput.cards(in: text)
    }
  }

  @Test func aCardGivenTwiceIsRefusedWithBothPlaces() {
    #expect(throws: CardInputError(position: .line(3), message: #"card "a" appears twice (first at line 1)"#)) {
      try CardInput.cards(in: "\(Self.line("a"))\n\(Self.line("b"))\n\(Self.line("a"))")
    }
    #expect(throws: CardInputError(position: .index(2), message: #"card "a" appears twice (first at card [0])"#)) {
      try CardInput.cards(in: "[\(Self.line("a")), \(Self.line("b")), \(Self.line("a"))]")
    }
  }

  @Test func valuesThatAreNotCardsAreRefused() {
    #expect(throws: CardInputError(position: .line(2), message: "expected an object")) {
      try CardInput.cards(in: "\(Self.line("a"))\n[\(Self.line("b"))]")
    }
  }

  @Test func blankTextHasNoCards() throws {
    #expect(try CardInput.cards(in: " \n\n").isEmpty)
  }
}
