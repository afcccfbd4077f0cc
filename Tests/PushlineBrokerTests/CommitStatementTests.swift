import Foundation
import GRDB
@testable import PushlineBroker
import PushlineSchema
import Testing

/// The statements SQLite storage runs past GRDB: they bind what they are given, refuse to run
/// outside a transaction, and report SQLite's errors without leaving the statement unusable.
@Suite("SQLite commit statements")
struct CommitStatementTests {
  static func database() throws -> DatabaseQueue {
    let database = try DatabaseQueue()
    try database.write { db in
      try db.execute(sql: "CREATE TABLE row (key TEXT PRIMARY KEY NOT NULL, number INTEGER NOT NULL, bytes BLOB)")
    }
    return database
  }

  static let insert = "INSERT INTO row VALUES (?, ?, ?)"

  @Test func bindsTextIntegersAndACardsBytesOrNull() throws {
    let database = try Self.database()
    let card = EncodedCard(TrackerCard(cardID: "a", priority: 1, isValid: true))
    try database.write { db in
      let statement = try CommitStatement(Self.insert, in: db)
      try statement.bind("a", at: 1)
      try statement.bind(Int64(1) << 40, at: 2)
      try statement.run(binding: card, at: 3)
      try statement.bind("b", at: 1)
      try statement.bind(-2, at: 2)
      try statement.run(binding: nil, at: 3)
    }
    let rows = try database.read { db in try Row.fetchAll(db, sql: "SELECT key, number, bytes FROM row ORDER BY key") }
    #expect(rows.map { $0["key"] as String } == ["a", "b"])
    #expect(rows.map { $0["number"] as Int64 } == [1 << 40, -2])
    #expect((rows[0]["bytes"] as Data?).map([UInt8].init) == card.bytes)
    #expect((rows[1]["bytes"] as Data?) == nil)
  }

  @Test func aFailedRunThrowsSQLitesErrorAndTheStatementRunsAgain() throws {
    let database = try Self.database()
    try database.write { db in
      let statement = try CommitStatement(Self.insert, in: db)
      try statement.bind("a", at: 1)
      try statement.bind(1, at: 2)
      try statement.run(binding: nil, at: 3)
      #expect { try statement.run(binding: nil, at: 3) } throws: {
        ($0 as? DatabaseError)?.resultCode == .SQLITE_CONSTRAINT  // the same key again
      }
      try statement.bind("b", at: 1)
      try statement.run(binding: nil, at: 3)
    }
    #expect(try database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM row") } == 2)
  }

  @Test func refusesToRunOutsideATransaction() throws {
    let database = try Self.database()
    let error = database.writeWithoutTransaction { db in
      #expect(throws: DatabaseError.self) { try CommitStatement(Self.insert, in: db) }
    }
    #expect(error?.resultCode == .SQLITE_MISUSE)
  }
}
