import PushlineWire

/// Why a stored table cannot be loaded — the broker's data directory, or a client's card
/// cache: a row does not decode, with a value not of its column's type (an `offset` of `'x'`)
/// or `card` bytes that are no card, as in a database damaged or written by something else.
/// Loading stops at the first such row rather than serve a guess at the rest: restore the
/// database or remove the row (a client may delete its cache, which snapshots refill).
public struct StoredRowError: Error, Hashable, Sendable, CustomStringConvertible {
  /// Whose database: `the broker's` or `the card cache's`.
  public var store: String
  /// The row's table, for example `card`.
  public var table: String
  /// Which row, and what is wrong with it.
  public var message: String

  /// An error about a row of `store`'s `table`.
  public init(store: String, table: String, message: String) {
    self.store = store
    self.table = table
    self.message = message
  }

  /// For example `a row of the broker's card table does not decode: …`.
  public var description: String { "a row of \(store) \(table) table does not decode: \(message)" }

  /// What `body` makes of `row`, a row of `store`'s `table`, or the error saying why it
  /// cannot: the database library's (which names the column and shows the row) or the card
  /// decoder's.
  public static func decoding<Row, Value>(
    _ row: Row, of table: String, in store: String, _ body: (Row) throws -> Value
  ) throws(StoredRowError) -> Value {
    do {
      return try body(row)
    } catch let error as WireDecodingError {
      throw StoredRowError(store: store, table: table, message: "the card's bytes are no card (\(error)) - row: \(row)")
    } catch {
      throw StoredRowError(store: store, table: table, message: "\(error)")
    }
  }
}
