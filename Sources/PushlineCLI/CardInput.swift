import PushlineSchema
import PushlineText

/// The cards `publish` reads: JSON lines (one card object per line, blank lines allowed), or one
/// JSON document, pretty-printed or not, that is a card object or an array of card objects —
/// so that what `pushline dump --json` prints can be edited and published back. Documents
/// written one after another are read as JSON lines are, whatever their line breaks.
enum CardInput {
  /// The cards of `text`, in order.
  ///
  /// - Throws: ``CardInputError`` at the first problem: invalid JSON (its line and column), a
  ///   value that is not a card (the line where the card begins, or its index in an array), or
  ///   a `cardID` given twice, since a publish carries each card at most once.
  static func cards(in text: String) throws(CardInputError) -> [TrackerCard] {
    let lines = LineIndex(text)
    let documents: [(offset: Int, value: JSONValue)]
    do {
      documents = try JSONParser.parseSequence(text)
    } catch {
      throw lines.syntaxError(error)
    }
    let entries: [(position: CardInputError.Position, value: JSONValue)]
    if documents.count == 1, case .array(let elements) = documents[0].value {
      entries = elements.enumerated().map { (.index($0.offset), $0.element) }
    } else {
      entries = documents.map { (.line(lines.line(at: $0.offset)), $0.value) }
    }
    var cards: [TrackerCard] = []
    var positions: [String: CardInputError.Position] = [:]
    for (position, value) in entries {
      let card: TrackerCard
      do {
        card = try ProtoJSON.decode(TrackerCard.self, from: value)
      } catch {
        throw CardInputError(position: position, message: "\(error)")
      }
      if let first = positions[card.cardID] {
        throw CardInputError(position: position, message: "card \"\(card.cardID)\" appears twice (first at \(first))")
      }
      positions[card.cardID] = position
      cards.append(card)
    }
    return cards
  }

  /// Where each line of a text begins, to name the line and column of a byte offset.
  private struct LineIndex {
    let utf8: [UInt8]
    /// The byte offset of each line's first byte.
    let starts: [Int]

    init(_ text: String) {
      let utf8 = Array(text.utf8)
      self.utf8 = utf8
      starts = [0] + utf8.indices.filter { utf8[$0] == UInt8(ascii: "\n") }.map { $0 + 1 }
    }

    /// The line (from 1) holding the byte at `offset`.
    func line(at offset: Int) -> Int {
      var low = 0
      var high = starts.count
      // The number of lines that begin at or before `offset`.
      while low < high {
        let middle = (low + high) / 2
        if starts[middle] <= offset { low = middle + 1 } else { high = middle }
      }
      return low
    }

    /// `error` with its line and column, and the line where its document begins if earlier.
    func syntaxError(_ error: JSONParser.SyntaxError) -> CardInputError {
      let line = line(at: error.offset)
      let column = String(decoding: utf8[starts[line - 1]..<min(error.offset, utf8.count)], as: UTF8.self).count + 1
      var message = "invalid JSON at column \(column): \(error.message)"
      if let start = error.documentOffset.map(line(at:)), start < line {
        message += " (in the JSON value that begins on line \(start))"
      }
      return CardInputError(position: .line(line), message: message)
    }
  }
}
