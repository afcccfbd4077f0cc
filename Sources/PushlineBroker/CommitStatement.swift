import GRDB
import GRDBSQLite
import PushlineSchema

/// A statement a commit runs once per change (a card's upsert, a topic's advance), bound and run
/// with SQLite's own API on a statement GRDB prepared and caches.
///
/// GRDB's way costs more than SQLite's insert itself: it builds an array of `DatabaseValue`s per
/// row, copies the card into a `Data`, and runs its bookkeeping for transaction observers
/// (``SQLiteBrokerStorage`` registers none). Going past it cut the SQLite writer's CPU by about a
/// third and gave SQLite (a) about 9 % more deliveries/s (BENCHMARKS.md). Only within a write
/// transaction, on its connection; GRDB's observers (`ValueObservation`, transaction observers)
/// would not see these writes.
struct CommitStatement {
  private let statement: Statement
  private let database: Database

  /// The statement for `sql`, prepared once per connection.
  ///
  /// - Throws: `DatabaseError` (SQLITE_MISUSE) outside a transaction: its rows would each
  ///   commit alone, and a commit must be all or nothing.
  init(_ sql: String, in database: Database) throws {
    guard sqlite3_get_autocommit(database.sqliteConnection) == 0 else {
      throw DatabaseError(resultCode: .SQLITE_MISUSE, message: "a CommitStatement runs only within a transaction", sql: sql)
    }
    statement = try database.cachedStatement(sql: sql)
    self.database = database
  }

  /// Binds `text` to parameter `index` (from 1), by its byte count (no scan for a terminator).
  func bind(_ text: String, at index: CInt) throws {
    var text = text
    try check(
      text.withUTF8 { sqlite3_bind_text(statement.sqliteStatement, index, $0.baseAddress, CInt($0.count), transient) })
  }

  /// Binds `integer` to parameter `index` (from 1).
  func bind(_ integer: Int64, at index: CInt) throws {
    try check(sqlite3_bind_int64(statement.sqliteStatement, index, integer))
  }

  /// Binds `card`'s bytes (NULL for none: a tombstone) to parameter `index` and runs the
  /// statement; the bytes are read in place, while it runs.
  func run(binding card: EncodedCard?, at index: CInt) throws {
    guard let card else {
      try check(sqlite3_bind_null(statement.sqliteStatement, index))
      return try run()
    }
    try card.withUnsafeBytes { bytes in
      // The bytes are bound with no destructor (SQLITE_STATIC): SQLite reads them during the
      // step below, and the binding is dropped before they go.
      try check(sqlite3_bind_blob(statement.sqliteStatement, index, bytes.baseAddress, CInt(bytes.count), nil))
      defer { sqlite3_bind_null(statement.sqliteStatement, index) }
      try run()
    }
  }

  /// Runs the statement with the parameters bound, to completion.
  ///
  /// - Throws: `DatabaseError` with SQLite's code and message.
  func run() throws {
    let handle = statement.sqliteStatement
    defer { sqlite3_reset(handle) }
    try check(sqlite3_step(handle), success: SQLITE_DONE)
  }

  /// Throws SQLite's error unless `code` is `success`: a parameter left unbound would write the
  /// previous row's value.
  private func check(_ code: CInt, success: CInt = SQLITE_OK) throws {
    guard code != success else { return }
    throw DatabaseError(
      resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(database.sqliteConnection)),
      sql: statement.sql)
  }
}

/// SQLite's "copy the value now" destructor (`SQLITE_TRANSIENT`), which its C header defines as
/// a macro Swift does not import.
private let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
