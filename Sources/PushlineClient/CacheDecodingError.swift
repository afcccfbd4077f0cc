/// Why ``SQLiteCachePersistence`` cannot load its file: a row does not decode — a value not of
/// its column's type (an `offset` of `'x'`), or `card` bytes that are no card — as in a file
/// damaged, or written by something other than this client. Loading stops at the first such
/// row rather than guess at the rest, and ``CardCache/init(persistence:)`` throws the error
/// on; deleting the file starts an empty cache, which the topics' snapshots refill.
public struct CacheDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The row's table: `topic` or `card`.
  public var table: String
  /// Which row, and what is wrong with it.
  public var message: String

  init(table: String, message: String) {
    self.table = table
    self.message = message
  }

  /// For example `a row of the card cache's card table does not decode: …`.
  public var description: String { "a row of the card cache's \(table) table does not decode: \(message)" }
}
