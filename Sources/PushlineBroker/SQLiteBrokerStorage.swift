import Foundation
import GRDB
import PushlineSchema
import PushlineWire

/// The embedded default: SQLite in a data directory, in WAL mode with `synchronous = FULL`,
/// so a commit that returned survives a crash of the process or of the machine.
///
/// A new database gets 16 KiB pages rather than SQLite's 4 KiB. A commit rewrites every page it
/// touches into the WAL, and a busy broker's commits touch most of the card table, so fewer,
/// larger pages mean fewer pages to find, write and check: SQLite (a) delivered about 9 % more,
/// and (d) committed with a quarter less CPU (BENCHMARKS.md). An existing database keeps its
/// page size (SQLite cannot change it in WAL mode).
///
/// Cards are stored as their protobuf bytes, so a card from a newer schema keeps its unknown
/// fields across restarts.
public final class SQLiteBrokerStorage: BrokerStorage {
  private let database: DatabasePool
  /// Whose rows a ``StoredRowError`` names.
  private static let store = "the broker's"

  /// Opens (creating if needed) `broker.sqlite` in `directory`.
  ///
  /// - Throws: when the directory cannot be created or the database cannot be opened or migrated.
  public init(directory: String) throws {
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    var configuration = Configuration()
    configuration.prepareDatabase { db in
      try db.execute(sql: "PRAGMA synchronous = FULL")
      try db.execute(sql: "PRAGMA page_size = 16384")  // Before WAL mode, so a new file takes it.
    }
    configuration.busyMode = .timeout(5)
    database = try DatabasePool(path: (directory as NSString).appendingPathComponent("broker.sqlite"), configuration: configuration)
    try Self.migrator.migrate(database)
  }

  private static var migrator: DatabaseMigrator {
    var migrator = DatabaseMigrator()
    migrator.registerMigration("v1") { db in
      try db.execute(
        sql: """
          CREATE TABLE topic (
            name TEXT PRIMARY KEY NOT NULL,
            epoch INTEGER NOT NULL,
            topOffset INTEGER NOT NULL,
            floorOffset INTEGER NOT NULL DEFAULT 0
          ) WITHOUT ROWID;
          CREATE TABLE card (
            topic TEXT NOT NULL,
            cardID TEXT NOT NULL,
            offset INTEGER NOT NULL,
            card BLOB,
            changedAtMillis INTEGER NOT NULL,
            PRIMARY KEY (topic, cardID)
          ) WITHOUT ROWID;
          CREATE TABLE publishRecord (
            topic TEXT NOT NULL,
            key TEXT NOT NULL,
            epoch INTEGER NOT NULL,
            firstOffset INTEGER NOT NULL,
            lastOffset INTEGER NOT NULL,
            committedAtMillis INTEGER NOT NULL,
            PRIMARY KEY (topic, key)
          ) WITHOUT ROWID;
          CREATE INDEX publishRecordAge ON publishRecord (committedAtMillis);
          """)
    }
    return migrator
  }

  /// Every topic with its cards and tombstones.
  ///
  /// - Throws: a ``StoredRowError`` for the first row that does not decode; GRDB's
  ///   error when the database cannot be read.
  public func loadTopics() async throws -> [TopicState] {
    try await database.read { db in
      var records: [String: [CardRecord]] = [:]
      let cards = try Row.fetchCursor(db, sql: "SELECT topic, cardID, offset, card, changedAtMillis FROM card")
      // Copied: a copy's values convert strictly, where the cursor's own row reads an offset of 'x' as 0.
      while let row = try cards.next()?.copy() {
        let (topic, record) = try StoredRowError.decoding(row, of: "card", in: Self.store) { row in
          let card = try row.decode(Data?.self, forColumn: "card").map { try EncodedCard(serializedBytes: [UInt8]($0)) }
          let record = CardRecord(
            cardID: try row.decode(forColumn: "cardID"), offset: try row.decode(forColumn: "offset"), card: card,
            changedAtMillis: try row.decode(forColumn: "changedAtMillis"))
          return (try row.decode(String.self, forColumn: "topic"), record)
        }
        records[topic, default: []].append(record)
      }
      return try Row.fetchAll(db, sql: "SELECT name, epoch, topOffset, floorOffset FROM topic").map { row in
        try StoredRowError.decoding(row, of: "topic", in: Self.store) { row in
          let name: String = try row.decode(forColumn: "name")
          return TopicState(
            name: name, epoch: try row.decode(forColumn: "epoch"), topOffset: try row.decode(forColumn: "topOffset"),
            floorOffset: try row.decode(forColumn: "floorOffset"), records: records[name] ?? [])
        }
      }
    }
  }

  /// The idempotency records written at or after `sinceMillis`.
  ///
  /// - Throws: a ``StoredRowError`` for the first row that does not decode; GRDB's
  ///   error when the database cannot be read.
  public func loadPublishRecords(sinceMillis: Int64) async throws -> [PublishRecord] {
    try await database.read { db in
      try Row.fetchAll(
        db, sql: "SELECT * FROM publishRecord WHERE committedAtMillis >= ?", arguments: [sinceMillis]
      ).map { row in
        try StoredRowError.decoding(row, of: "publishRecord", in: Self.store) { row in
          PublishRecord(
            topic: try row.decode(forColumn: "topic"), key: try row.decode(forColumn: "key"), epoch: try row.decode(forColumn: "epoch"),
            firstOffset: try row.decode(forColumn: "firstOffset"), lastOffset: try row.decode(forColumn: "lastOffset"),
            committedAtMillis: try row.decode(forColumn: "committedAtMillis"))
        }
      }
    }
  }

  public func commit(_ batch: StorageBatch) async throws {
    try await database.write { db in
      // Prepared once per connection and run once per topic and per change: see CommitStatement.
      let advance = try CommitStatement(
        """
        INSERT INTO topic (name, epoch, topOffset) VALUES (?, ?, ?)
        ON CONFLICT (name) DO UPDATE SET topOffset = max(topOffset, excluded.topOffset)
        """, in: db)
      let upsert = try CommitStatement("INSERT OR REPLACE INTO card VALUES (?, ?, ?, ?, ?)", in: db)
      for topic in batch.topics {
        try advance.bind(topic.topic, at: 1)
        try advance.bind(topic.epoch, at: 2)
        try advance.bind(topic.topOffset, at: 3)
        try advance.run()
        for record in topic.records {
          try upsert.bind(topic.topic, at: 1)
          try upsert.bind(record.cardID, at: 2)
          try upsert.bind(record.offset, at: 3)
          try upsert.bind(record.changedAtMillis, at: 5)
          try upsert.run(binding: record.card, at: 4)
        }
      }
      let dropTombstone = try db.cachedStatement(
        sql: "DELETE FROM card WHERE topic = ? AND cardID = ? AND offset = ? AND card IS NULL")
      for prune in batch.prunes {
        for tombstone in prune.tombstones {
          try dropTombstone.execute(arguments: [prune.topic, tombstone.cardID, tombstone.offset])
        }
        try db.execute(
          sql: "UPDATE topic SET floorOffset = max(floorOffset, ?) WHERE name = ?", arguments: [prune.floorOffset, prune.topic])
      }
      if let cutoff = batch.forgetPublishRecordsBeforeMillis {
        try db.execute(sql: "DELETE FROM publishRecord WHERE committedAtMillis < ?", arguments: [cutoff])
      }
      let remember = try db.cachedStatement(sql: "INSERT OR REPLACE INTO publishRecord VALUES (?, ?, ?, ?, ?, ?)")
      for record in batch.publishRecords {
        try remember.execute(arguments: [
          record.topic, record.key, record.epoch, record.firstOffset, record.lastOffset, record.committedAtMillis,
        ])
      }
    }
  }
}
