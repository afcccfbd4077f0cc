/// Why the text given to `publish` does not yield its cards, and where: a line of the text, or
/// a card's index in a JSON array.
struct CardInputError: Error, Hashable, CustomStringConvertible {
  /// A place in the text, as its user would look for it.
  enum Position: Hashable, CustomStringConvertible {
    /// A line (from 1): where a syntax error is, or where the card in question begins.
    case line(Int)
    /// The card at this index (from 0) of a text that is one JSON array.
    case index(Int)

    var description: String {
      switch self {
      case .line(let line): "line \(line)"
      case .index(let index): "card [\(index)]"
      }
    }
  }

  /// Where the problem is.
  var position: Position
  /// What is wrong.
  var message: String

  var description: String { "\(position): \(message)" }
}
