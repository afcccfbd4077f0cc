import Foundation
import GRDB
import PushlineSchema
import PushlineWire

/// The client's cache in SQLite (WAL), so a client restarted during an outage shows its cards
/// at once and resumes from its positions when the broker is back. Cards are stored as their
/// protobuf bytes, unknown fields included.
public final class SQLiteCachePersistence: CachePersistence {
  private let database: DatabaseQueue

  /// Opens (creating if needed) the cache at `path`.
  public init(path: String) throws {
    let directory = (path as NSString).deletingLastPathComponent
    if !directory.isEmpty { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }
    database = try DatabaseQueue(path: path)
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
    return migrator
  }

  public func load() throws -> [TopicCache] {
    try database.read { db in
      var topics: [String: TopicCache] = [:]
      for row in try Row.fetchAll(db, sql: "SELECT * FROM topic") {
        let name: String = row["name"]
        topics[name] = TopicCache(topic: name, epoch: row["epoch"], position: row["position"], verifiedAtMillis: row["verifiedAtMillis"])
      }
      let cards = try Row.fetchCursor(db, sql: "SELECT * FROM card")
      while let row = try cards.next() {
        let topic: String = row["topic"]
        let blob: Data = row["card"]
        let card = try TrackerCard(serializedBytes: [UInt8](blob))
        topics[topic, default: TopicCache(topic: topic)].cards[card.cardID] = CachedCard(
          topic: topic, card: card, offset: row["offset"], receivedAtMillis: row["receivedAtMillis"])
      }
      return Array(topics.values)
    }
  }

  public func save(_ topics: [TopicCache]) throws {
    try database.write { db in
      let insert = try db.cachedStatement(sql: "INSERT INTO card VALUES (?, ?, ?, ?, ?)")
      for topic in topics {
        try db.execute(
          sql: "INSERT OR REPLACE INTO topic VALUES (?, ?, ?, ?)",
          arguments: [topic.topic, topic.epoch, topic.position, topic.verifiedAtMillis])
        try db.execute(sql: "DELETE FROM card WHERE topic = ?", arguments: [topic.topic])
        for cached in topic.cards.values {
          try insert.execute(arguments: [
            topic.topic, cached.card.cardID, Data(cached.card.serializedBytes()), cached.offset, cached.receivedAtMillis,
          ])
        }
      }
    }
  }
}
