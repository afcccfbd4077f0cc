/// Why ``SQLiteBrokerStorage`` cannot load its data directory: a row does not decode — a value
/// not of its column's type (an `offset` of `'x'`), or `card` bytes that are no card — as in a
/// database damaged, or written by something other than the broker. The broker does not start
/// on it rather than serve a guess at the rest: restore the database, or remove the row.
public struct StorageDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The row's table: `topic`, `card` or `publishRecord`.
  public var table: String
  /// Which row, and what is wrong with it.
  public var message: String

  init(table: String, message: String) {
    self.table = table
    self.message = message
  }

  /// For example `a row of the broker's card table does not decode: …`.
  public var description: String { "a row of the broker's \(table) table does not decode: \(message)" }
}
