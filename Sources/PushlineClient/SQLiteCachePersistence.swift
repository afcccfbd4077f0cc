import Foundation
import GRDB
import PushlineSchema
import PushlineWire

/// The client's cache in SQLite (WAL), so a client restarted during an outage shows its cards
/// at once and resumes from its positions when the broker is back. Cards are stored as their
/// protobuf bytes, unknown fields included.
public final class SQLiteCachePersistence: CachePersistence {
  private let database: DatabaseQueue
  /// Whose rows a ``StoredRowError`` names.
  private static let store = "the card cache's"

  /// Opens (creating if needed) the cache at `path`.
  public init(path: String) throws {
    let directory = (path as NSString).deletingLastPathComponent
    if !directory.isEmpty { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
    // Another connection may be writing the file — the app's previous instance finishing its
    // flush, or a second process of it: wait for it, as the broker's storage does, rather
    // than fail with "database is locked".
    var configuration = Configuration()
    configuration.busyMode = .timeout(5)
    database = try DatabaseQueue(path: path, configuration: configuration)
    try database.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode = WAL") }
    try Self.migrator.migrate(database)
  }

  private static var migrator: DatabaseMigrator {
    var migrator = DatabaseMigrator()
    migrator.registerMigration("v1") { db in
      try db.execute(
        sql: """
          CREATE TABLE topic (
            name TEXT PRIMARY KEY NOT NULL, epoch INTEGER, position INTEGER, verifiedAtMillis INTEGER
          ) WITHOUT ROWID;
          CREATE TABLE card (
            topic TEXT NOT NULL, cardID TEXT NOT NULL, card BLOB NOT NULL, offset INTEGER NOT NULL,
            receivedAtMillis INTEGER NOT NULL, PRIMARY KEY (topic, cardID)
          ) WITHOUT ROWID;
          """)
    }
    // A snapshot sent in parts, part way (see `TopicCache.awaitingSnapshot`): where it ends,
    // and the cards it has yet to confirm. In tables of their own, so that the v1 tables keep
    // their columns and an earlier build can still write the file; their rows hold only at the
    // position stored with them (an earlier build that moved the topic on left them stale).
    migrator.registerMigration("v2") { db in
      try db.execute(
        sql: """
          CREATE TABLE snapshotInParts (
            topic TEXT PRIMARY KEY NOT NULL, throughOffset INTEGER NOT NULL, position INTEGER NOT NULL
          ) WITHOUT ROWID;
          CREATE TABLE awaitingSnapshot (
            topic TEXT NOT NULL, cardID TEXT NOT NULL, PRIMARY KEY (topic, cardID)
          ) WITHOUT ROWID;
          """)
    }
    // The broker's clock minus the client's: one row.
    migrator.registerMigration("v3") { db in
      try db.execute(sql: "CREATE TABLE clock (id INTEGER PRIMARY KEY CHECK (id = 0), skewMillis INTEGER NOT NULL)")
    }
    return migrator
  }

  /// The stored clock skew, if any.
  ///
  /// - Throws: a ``StoredRowError`` if the row does not decode; GRDB's error when the file
  ///   cannot be read.
  public func loadClockSkew() throws -> Int64? {
    try database.read { db in
      try Row.fetchOne(db, sql: "SELECT skewMillis FROM clock").map { row in
        try StoredRowError.decoding(row, of: "clock", in: Self.store) { try $0.decode(Int64.self, forColumn: "skewMillis") }
      }
    }
  }

  /// Every stored topic.
  ///
  /// - Throws: a ``StoredRowError`` for the first row that does not decode; GRDB's error
  ///   when the file cannot be read.
  public func load() throws -> [TopicCache] {
    try database.read { db in
      var topics: [String: TopicCache] = [:]
      for row in try Row.fetchAll(db, sql: "SELECT * FROM topic") {
        let topic = try StoredRowError.decoding(row, of: "topic", in: Self.store) { row in
          TopicCache(
            topic: try row.decode(forColumn: "name"), epoch: try row.decode(forColumn: "epoch"),
            position: try row.decode(forColumn: "position"), verifiedAtMillis: try row.decode(forColumn: "verifiedAtMillis"))
        }
        topics[topic.topic] = topic
      }
      let cards = try Row.fetchCursor(db, sql: "SELECT * FROM card")
      // Copied: a copy's values convert strictly, where the cursor's own row reads an offset of 'x' as 0.
      while let row = try cards.next()?.copy() {
        let cached = try StoredRowError.decoding(row, of: "card", in: Self.store) { row in
          CachedCard(
            topic: try row.decode(forColumn: "topic"),
            card: try TrackerCard(serializedBytes: [UInt8](try row.decode(Data.self, forColumn: "card"))),
            offset: try row.decode(forColumn: "offset"), receivedAtMillis: try row.decode(forColumn: "receivedAtMillis"))
        }
        topics[cached.topic, default: TopicCache(topic: cached.topic)].cards[cached.card.cardID] = cached
      }
      for row in try Row.fetchAll(db, sql: "SELECT * FROM snapshotInParts") {
        let (topic, throughOffset, position) = try StoredRowError.decoding(row, of: "snapshotInParts", in: Self.store) { row in
          (try row.decode(String.self, forColumn: "topic"), try row.decode(Int64.self, forColumn: "throughOffset"),
           try row.decode(Int64.self, forColumn: "position"))
        }
        if topics[topic]?.position == position { topics[topic]?.snapshotThroughOffset = throughOffset }
      }
      for row in try Row.fetchAll(db, sql: "SELECT * FROM awaitingSnapshot") {
        let (topic, cardID) = try StoredRowError.decoding(row, of: "awaitingSnapshot", in: Self.store) { row in
          (try row.decode(String.self, forColumn: "topic"), try row.decode(String.self, forColumn: "cardID"))
        }
        guard topics[topic]?.snapshotThroughOffset != nil, topics[topic]?.cards[cardID] != nil else { continue }
        topics[topic]?.awaitingSnapshot.insert(cardID)
      }
      return Array(topics.values)
    }
  }

  /// Replaces the stored copies of `topics` (their cards, positions and marks of a snapshot
  /// in parts) and, unless `clockSkewMillis` is `nil`, the stored clock skew, in one
  /// transaction.
  ///
  /// - Throws: GRDB's error when the file cannot be written; the transaction is then rolled
  ///   back, and nothing stored.
  public func save(_ topics: [TopicCache], clockSkewMillis: Int64?) throws {
    try database.write { db in
      if let clockSkewMillis {
        try db.execute(sql: "INSERT OR REPLACE INTO clock (id, skewMillis) VALUES (0, ?)", arguments: [clockSkewMillis])
      }
      let insert = try db.cachedStatement(sql: "INSERT INTO card (topic, cardID, card, offset, receivedAtMillis) VALUES (?, ?, ?, ?, ?)")
      let awaiting = try db.cachedStatement(sql: "INSERT INTO awaitingSnapshot (topic, cardID) VALUES (?, ?)")
      for topic in topics {
        try db.execute(
          sql: "INSERT OR REPLACE INTO topic (name, epoch, position, verifiedAtMillis) VALUES (?, ?, ?, ?)",
          arguments: [topic.topic, topic.epoch, topic.position, topic.verifiedAtMillis])
        for table in ["card", "snapshotInParts", "awaitingSnapshot"] {
          try db.execute(sql: "DELETE FROM \(table) WHERE topic = ?", arguments: [topic.topic])
        }
        for cached in topic.cards.values {
          try insert.execute(arguments: [
            topic.topic, cached.card.cardID, Data(cached.card.serializedBytes()), cached.offset, cached.receivedAtMillis,
          ])
        }
        guard let throughOffset = topic.snapshotThroughOffset, let position = topic.position else { continue }
        try db.execute(
          sql: "INSERT INTO snapshotInParts (topic, throughOffset, position) VALUES (?, ?, ?)",
          arguments: [topic.topic, throughOffset, position])
        for cardID in topic.awaitingSnapshot { try awaiting.execute(arguments: [topic.topic, cardID]) }
      }
    }
  }
}
