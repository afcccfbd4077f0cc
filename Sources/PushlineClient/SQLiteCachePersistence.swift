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
    // A snapshot sent in parts, part way: where it ends, and the cards it has yet to confirm
    // (see `TopicCache.awaitingSnapshot`), so that a restart in between still drops them.
    migrator.registerMigration("v2") { db in
      try db.execute(
        sql: """
          ALTER TABLE topic ADD COLUMN snapshotThroughOffset INTEGER;
          ALTER TABLE card ADD COLUMN awaitsSnapshot INTEGER NOT NULL DEFAULT 0;
          """)
    }
    return migrator
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
            position: try row.decode(forColumn: "position"), verifiedAtMillis: try row.decode(forColumn: "verifiedAtMillis"),
            snapshotThroughOffset: try row.decode(forColumn: "snapshotThroughOffset"))
        }
        topics[topic.topic] = topic
      }
      let cards = try Row.fetchCursor(db, sql: "SELECT * FROM card")
      // Copied: a copy's values convert strictly, where the cursor's own row reads an offset of 'x' as 0.
      while let row = try cards.next()?.copy() {
        let (cached, awaitsSnapshot) = try StoredRowError.decoding(row, of: "card", in: Self.store) { row in
          let cached = CachedCard(
            topic: try row.decode(forColumn: "topic"),
            card: try TrackerCard(serializedBytes: [UInt8](try row.decode(Data.self, forColumn: "card"))),
            offset: try row.decode(forColumn: "offset"), receivedAtMillis: try row.decode(forColumn: "receivedAtMillis"))
          return (cached, try row.decode(Bool.self, forColumn: "awaitsSnapshot"))
        }
        topics[cached.topic, default: TopicCache(topic: cached.topic)].cards[cached.card.cardID] = cached
        if awaitsSnapshot { topics[cached.topic]?.awaitingSnapshot.insert(cached.card.cardID) }
      }
      return Array(topics.values)
    }
  }

  public func save(_ topics: [TopicCache]) throws {
    try database.write { db in
      let insert = try db.cachedStatement(
        sql: "INSERT INTO card (topic, cardID, card, offset, receivedAtMillis, awaitsSnapshot) VALUES (?, ?, ?, ?, ?, ?)")
      for topic in topics {
        try db.execute(
          sql: "INSERT OR REPLACE INTO topic (name, epoch, position, verifiedAtMillis, snapshotThroughOffset) VALUES (?, ?, ?, ?, ?)",
          arguments: [topic.topic, topic.epoch, topic.position, topic.verifiedAtMillis, topic.snapshotThroughOffset])
        try db.execute(sql: "DELETE FROM card WHERE topic = ?", arguments: [topic.topic])
        for cached in topic.cards.values {
          try insert.execute(arguments: [
            topic.topic, cached.card.cardID, Data(cached.card.serializedBytes()), cached.offset, cached.receivedAtMillis,
            topic.awaitingSnapshot.contains(cached.card.cardID),
          ])
        }
      }
    }
  }
}
