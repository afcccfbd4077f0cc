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

  public func loadTopics() async throws -> [TopicState] {
    try await database.read { db in
      var records: [String: [CardRecord]] = [:]
      let cards = try Row.fetchCursor(db, sql: "SELECT topic, cardID, offset, card, changedAtMillis FROM card")
      while let row = try cards.next() {
        let blob: Data? = row["card"]
        let card = try blob.map { try EncodedCard(serializedBytes: [UInt8]($0)) }
        records[row["topic"], default: []].append(
          CardRecord(cardID: row["cardID"], offset: row["offset"], card: card, changedAtMillis: row["changedAtMillis"]))
      }
      return try Row.fetchAll(db, sql: "SELECT name, epoch, topOffset, floorOffset FROM topic").map { row in
        let name: String = row["name"]
        return TopicState(
          name: name, epoch: row["epoch"], topOffset: row["topOffset"], floorOffset: row["floorOffset"],
          records: records[name] ?? [])
      }
    }
  }

  public func loadPublishRecords(sinceMillis: Int64) async throws -> [PublishRecord] {
    try await database.read { db in
      try Row.fetchAll(
        db, sql: "SELECT * FROM publishRecord WHERE committedAtMillis >= ?", arguments: [sinceMillis]
      ).map { row in
        PublishRecord(
          topic: row["topic"], key: row["key"], epoch: row["epoch"], firstOffset: row["firstOffset"],
          lastOffset: row["lastOffset"], committedAtMillis: row["committedAtMillis"])
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
