import Foundation
import GRDB
public import Logging
import PushlineRPC
import PushlineSchema
import PushlineWire
import Synchronization

/// The embedded default: SQLite in a data directory, in WAL mode with `synchronous = FULL`,
/// so a commit that returned survives a crash of the process or of the machine.
///
/// Cards are stored as versions appended in commit order (`cardVersion`, keyed by a sequence
/// number): a card's live version is its newest row, and the rows it superseded are deleted
/// later, many at a time. A commit rewrites every page it touches into the WAL, and the cards
/// of one commit belong to many topics: kept in a table keyed by topic and card, they landed
/// on pages all over it, and each commit rewrote most of the table (SQLite's (d) p50 fell
/// 3-5× with the change, for about 5 % of (a)'s deliveries; BENCHMARKS.md). Appended, they
/// fill the last few pages. The superseded rows are deleted once there are twice as many as
/// live cards (and at least ``collectionThreshold``), oldest first, a few hundred per commit
/// (``collectionBatch``, or twice as many as the commit superseded): old pages are rewritten
/// about once per collection, not per commit, no commit pays for thousands of deletions at
/// once, and the table holds about three rows per live card at most. The storage remembers each card's live row (its sequence number, about
/// a hundred bytes per card) to know what a new version supersedes; a restart finds the
/// superseded rows again as it loads.
///
/// A new database gets 16 KiB pages rather than SQLite's 4 KiB (fewer pages to find, write
/// and check per commit; BENCHMARKS.md). An existing database keeps its page size (SQLite
/// cannot change it in WAL mode).
///
/// Cards are stored as their protobuf bytes, so a card from a newer schema keeps its unknown
/// fields across restarts.
///
/// One broker at a time: the storage holds the directory (``DataDirectory``) for
/// as long as it lives, and a second one on the same directory is refused.
///
/// A database is marked open for as long as a storage has it, and the mark is checkpointed
/// into the database file itself (at open, or at the first commit that finds no reader holding
/// the log back). Opening a database still marked open (its broker crashed)
/// whose write-ahead log is gone (deleted, or the file restored from a copy without it) finds
/// the commits since the last checkpoint lost, acknowledged or not. Giving out their offsets
/// again in the same epochs would break every client that saw them, so every topic then gets
/// a new epoch (``epochRenewal``) and positions in the old ones are answered with snapshots.
/// So does a database older than the directory's last run — each open numbers its run, in the
/// database and in the directory's `broker.run` — which a backup restored over it is. The
/// number also moves on while the broker runs, with the first commit once the renumbering
/// interval (a minute by default) has passed since it last did, and at a ``close()`` after commits
/// since: a copy of the database and its log taken while the broker ran (a volume snapshot of
/// the two files) and restored alone is then older too — unless the broker crashed with all the
/// commits after the copy made within that interval of the number's last move.
public final class SQLiteBrokerStorage: BrokerStorage {
  private let database: DatabasePool
  /// Why opening gave every topic a new epoch, if it did: publishes acknowledged before may be
  /// lost, and clients get snapshots rather than offsets given out twice.
  public let epochRenewal: EpochRenewal?
  /// The directory, held while the storage lives, and let go of after the database is closed.
  private let held: DataDirectory
  /// Whose rows a ``StoredRowError`` names.
  private static let store = "the broker's"
  /// The least time between two numberings of the run while the broker commits.
  private let renumberingInterval: Duration
  /// The run's number, as the database and then the directory's record hold it.
  private let numbering: Mutex<RunNumbering>
  /// Where a record of the run that could not be written is reported (the database holds the
  /// number: only a copy's age is then told less finely).
  private let logger: Logger

  /// The run's number and how it moves on.
  private struct RunNumbering {
    var number: Int64
    var numberedAt: ContinuousClock.Instant
    /// A commit went in since the run was last numbered: a copy taken before it lacks it.
    var committedSince = false

    /// The number a commit at `now` carries, if any: the next, once `interval` has passed
    /// since the last numbering (the commit itself is what a copy taken before lacks).
    func nextForCommit(at now: ContinuousClock.Instant, interval: Duration) -> Int64? {
      now - numberedAt >= interval ? following : nil
    }

    /// The number the close carries, if any: the next, when a commit went in since the last
    /// numbering.
    var nextForClose: Int64? { committedSince ? following : nil }

    /// The next number, short of the last (at it, the next start renews every epoch: see
    /// ``DataDirectory/maxRun``).
    private var following: Int64? { number + 1 < DataDirectory.maxRun ? number + 1 : nil }
  }

  /// A card of a topic, as the live versions are looked up.
  struct CardKey: Hashable {
    var topic: String
    var cardID: String
  }

  /// Where the cards' versions stand, as committed: a commit changes them in place, and puts
  /// them back if its transaction fails.
  struct Versions {
    /// Each card's live row, known once the table has been read (by ``loadTopics()``, or by
    /// the first commit).
    var live: [CardKey: Int64]?
    /// Superseded rows being collected, sorted: the oldest first.
    var backlog: ArraySlice<Int64> = []
    /// Rows superseded since the backlog was sorted, in no order. A card's older rows have
    /// lower numbers than its tombstone, and join the list no later than it (which joins
    /// when pruned): sorted into the same backlog or an earlier one, they are deleted first.
    var recent: [Int64] = []

    /// The rows superseded and not deleted yet.
    var supersededCount: Int { backlog.count + recent.count }
  }

  /// What a commit changed of the versions, to put back if its transaction fails.
  struct VersionJournal {
    /// Each card whose live row the commit changed, with the row it had before, in order.
    var replaced: [(key: CardKey, seq: Int64?)] = []
    /// How many rows were in ``Versions/recent`` before the commit.
    let recentBefore: Int
    /// The superseded rows as they stood before the commit collected some.
    var beforeCollection: (backlog: ArraySlice<Int64>, recent: [Int64])?
  }

  private let versions = Mutex(Versions())

  /// The fewest superseded rows that start a collection (more when there are many live cards).
  static let collectionThreshold = 4096

  /// The fewest superseded rows a collecting commit deletes, and the most, unless it superseded
  /// more than half as many itself. Commits deleting 4,096 rows at once, every few hundred
  /// milliseconds at 50,000 updates a second, lengthened (d)'s tail: p99 10.0 ms against
  /// 6.8 ms with 256, medians of eight alternating runs (BENCHMARKS.md).
  static let collectionBatch = 256

  /// Opens (creating if needed) `broker.sqlite` in `directory`, and holds the directory
  /// until the storage goes.
  ///
  /// - Parameters:
  ///   - lockTimeout: how long to wait for a broker that holds the directory to let go of it
  ///     (one restarted while its previous process exits), as SQLite waits for its locks.
  ///   - renumberingInterval: the least time between two numberings of the run while the
  ///     broker commits: each writes `broker.run` (synced) with a commit.
  ///   - logger: where a record of the run that could not be written while the broker runs is
  ///     reported.
  /// - Throws: ``DataDirectoryInUseError`` when another broker still holds the directory;
  ///   ``DataDirectoryError`` when the directory cannot be created or locked, its record of
  ///   runs (`broker.run`) read or written, or its note of a missing log (`broker.log-missing`)
  ///   written or removed; GRDB's error when the database cannot be opened or migrated.
  public init(
    directory: String, lockTimeout: Duration = .seconds(5), renumberingInterval: Duration = .seconds(60),
    logger: Logger = Logger(label: "pushline.storage")
  ) throws {
    self.renumberingInterval = renumberingInterval
    self.logger = logger
    held = try DataDirectory(path: directory, waiting: lockTimeout)
    let path = (directory as NSString).appendingPathComponent("broker.sqlite")
    // Before the pool opens, which writes a log of its own: a start killed after that would
    // leave one behind that passes for the lost log, so a missing log is noted first, and the
    // note stands until the database records what it meant (below).
    let logKept = Self.hasContent(atPath: path + "-wal") && !held.hasMissingLogNote
    if !logKept { try held.noteMissingLog() }
    var configuration = Configuration()
    configuration.prepareDatabase { db in
      try db.execute(sql: "PRAGMA page_size = 16384")  // Before WAL mode, so a new file takes it.
    }
    configuration.busyMode = .timeout(5)
    database = try DatabasePool(path: path, configuration: configuration)
    // After the pool is open: turning WAL mode on, GRDB sets `synchronous = NORMAL` on its
    // writer, which syncs the WAL only at checkpoints, so a machine's crash could take
    // commits already acknowledged. The pool keeps this one writer connection for its life.
    try database.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = FULL") }
    try Self.migrator.migrate(database)
    // The mark: 0 closed, 1 open, 2 open with epochs still to renew. A renewal is noted first,
    // in a small transaction of its own: a start killed while renewing (a long transaction,
    // which spills into a new log) then leaves a log the next start replays, and the mark
    // makes that one renew in turn. The run: this open's number, one past the database's and
    // the directory's record; a database behind the record is older than the last run.
    let (mark, run) = try database.read { db in
      (try Int.fetchOne(db, sql: "SELECT unclosed FROM brokerRun") ?? 0, try Int64.fetchOne(db, sql: "SELECT run FROM brokerRun") ?? 0)
    }
    let recorded = try held.lastRun()
    let lastRun: Int64 = if case .run(let number) = recorded { number } else { 0 }
    // Numbering starts again once exhausted (a record tampered with), and only with a
    // renewal: after it, a backup numbered anywhere below the old count would pass as newer.
    let isExhausted = max(run, lastRun) >= DataDirectory.maxRun
    let renewal: EpochRenewal?
    if mark == 2 {
      renewal = .renewalCutShort
    } else if mark == 1, !logKept {
      renewal = .writeAheadLogLost
    } else if recorded == .unreadable || isExhausted {
      renewal = .runRecordUnreadable
    } else if recorded == .none, run > 0 {
      renewal = .runRecordMissing
    } else if run < lastRun {
      renewal = .databaseOlderThanLastRun
    } else {
      renewal = nil
    }
    let thisRun = isExhausted ? 1 : max(run, lastRun) + 1
    // A database that counts no runs yet (new, or from before runs were counted) in a
    // directory with no record: the record starts first, so that a start stopped before it
    // records this run leaves a record behind the database's (no renewal), not none at all
    // (which would read as a removed record, and renew every epoch for nothing).
    if recorded == .none, run == 0 { try held.recordRun(0) }
    if renewal != nil {
      try database.write { db in
        try db.execute(sql: "INSERT OR REPLACE INTO brokerRun (id, unclosed, run) VALUES (1, 2, ?)", arguments: [run])
      }
    }
    // Marked open (1) — after a renewal only once the directory has recorded the run, so
    // that a start killed before that renews again, and says so.
    try database.write { db in
      if renewal != nil { try Self.renewEpochs(db) }
      try db.execute(
        sql: "INSERT OR REPLACE INTO brokerRun (id, unclosed, run) VALUES (1, ?, ?)", arguments: [renewal == nil ? 1 : 2, thisRun])
    }
    // The log now holds this start's mark: a crash from here on leaves a log that tells the
    // next start what it needs to know.
    if !logKept { try held.clearMissingLogNote() }
    do {
      // After the database holds the run: a crash in between leaves the directory's record
      // behind the database's, which is no renewal.
      try held.recordRun(thisRun)
      if renewal != nil { try database.write { try $0.execute(sql: "UPDATE brokerRun SET unclosed = 1") } }
      // Into the database file, not only the log: a log lost later is then noticed. Passive:
      // a reader holding an old snapshot (a backup tool, an sqlite3 shell) must not keep the
      // broker from starting; the commits then try again until the mark is in (see `commit`).
      markInFile = Mutex(try database.writeWithoutTransaction { try Self.checkpointsWholeLog($0) })
    } catch {
      // A start that fails here lost nothing: marked closed again (a renewal still pending
      // stays so), the next start does not take it for a crash.
      if renewal == nil { try? database.write { try $0.execute(sql: "UPDATE brokerRun SET unclosed = 0") } }
      throw error
    }
    epochRenewal = renewal
    numbering = Mutex(RunNumbering(number: thisRun, numberedAt: .now))
  }

  /// Copies what it can of the log into the database file, waiting for no reader; whether that
  /// was all of it.
  private static func checkpointsWholeLog(_ db: Database) throws -> Bool {
    let (logged, copied) = try db.checkpoint(.passive)
    return copied >= logged
  }

  /// Whether the open mark has reached the database file (``checkpointsWholeLog(_:)``).
  private let markInFile: Mutex<Bool>

  /// Whether a file is at `path` and holds at least one byte.
  private static func hasContent(atPath path: String) -> Bool {
    var status = stat()
    return stat(path, &status) == 0 && status.st_size > 0
  }

  /// Gives every topic a new epoch, and the idempotency records their topic's: their offsets
  /// stay, and are valid in it.
  private static func renewEpochs(_ db: Database) throws {
    for row in try Row.fetchAll(db, sql: "SELECT name, epoch FROM topic") {
      let (name, old) = try StoredRowError.decoding(row, of: "topic", in: store) { row in
        (try row.decode(String.self, forColumn: "name"), try row.decode(Int64.self, forColumn: "epoch"))
      }
      try setEpoch(TopicState.epoch(renewing: old), of: name, in: db)
    }
  }

  /// Gives topic `name` `epoch`, and its idempotency records too.
  private static func setEpoch(_ epoch: Int64, of name: String, in db: Database) throws {
    try db.execute(sql: "UPDATE topic SET epoch = ? WHERE name = ?", arguments: [epoch, name])
    try db.execute(sql: "UPDATE publishRecord SET epoch = ? WHERE topic = ?", arguments: [epoch, name])
  }

  /// The writer connection's `PRAGMA synchronous` (2 is FULL: each commit waits for the disk).
  func writerSynchronousLevel() throws -> Int? {
    try database.writeWithoutTransaction { try Int.fetchOne($0, sql: "PRAGMA synchronous") }
  }

  /// Whether ``close()`` has run.
  private let closed = Mutex(false)

  /// Marks the database closed and closes it, folding the write-ahead log into it: a broker
  /// that stops calls this, and commits after it fail. Calling it again does nothing.
  ///
  /// - Throws: GRDB's error when the database cannot be marked or closed; it is then opened
  ///   next as a crashed broker's, its log replayed.
  public func close() throws {
    guard closed.withLock({ closed in defer { closed = true }; return !closed }) else { return }
    // Decided on the writer's queue, after any commit still under way there.
    let run = try database.write { db -> Int64? in
      let run = numbering.withLock { $0.nextForClose }
      try db.execute(sql: "UPDATE brokerRun SET unclosed = 0")
      if let run { try Self.setRun(run, in: db) }
      return run
    }
    // Recorded at once: the checkpoint below may fail (a reader holding the log, a backup
    // tool's), and the number is durable already.
    if let run { record(run, at: .now) }
    // Emptied by hand: GRDB closes its writer before its readers, so SQLite's own checkpoint
    // at the last close never runs (that reader may not write), and the log would stay.
    try database.writeWithoutTransaction { _ = try $0.checkpoint(.truncate) }
    try database.close()
  }

  /// Numbers the run `run` in the database (within the caller's transaction).
  private static func setRun(_ run: Int64, in db: Database) throws {
    try db.execute(sql: "UPDATE brokerRun SET run = ?", arguments: [run])
  }

  /// Records `run`, which the database holds already, in the directory (after it: a record
  /// ahead of the database would make it look older at the next start).
  private func record(_ run: Int64, at now: ContinuousClock.Instant) {
    numbering.withLock { $0 = RunNumbering(number: run, numberedAt: now) }
    do {
      try held.recordRun(run)
    } catch {
      // The database holds the number, and the next start goes on after it: only a copy of the
      // database taken since is not told older. Tried again with the next numbering.
      logger.warning("the run's number could not be recorded in the data directory", metadata: ["error": "\(error)"])
    }
  }

  deinit {
    // Closed here at the latest, before the directory is let go of: the next broker on it
    // finds it closed.
    try? close()
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
    migrator.registerMigration("v2: card versions") { db in
      try db.execute(
        sql: """
          CREATE TABLE cardVersion (
            seq INTEGER PRIMARY KEY,
            topic TEXT NOT NULL,
            cardID TEXT NOT NULL,
            offset INTEGER NOT NULL,
            card BLOB,
            changedAtMillis INTEGER NOT NULL
          );
          INSERT INTO cardVersion (topic, cardID, offset, card, changedAtMillis)
            SELECT topic, cardID, offset, card, changedAtMillis FROM card ORDER BY offset;
          DROP TABLE card;
          """)
    }
    migrator.registerMigration("v3: publish fingerprints") { db in
      // Records kept before have none: a retry of one is answered as a replay, as it was.
      try db.execute(sql: "ALTER TABLE publishRecord ADD COLUMN fingerprint INTEGER")
    }
    migrator.registerMigration("v4: open mark") { db in
      // One row: whether a storage has the database open, or crashed with it open.
      try db.execute(sql: "CREATE TABLE brokerRun (id INTEGER PRIMARY KEY CHECK (id = 1), unclosed INTEGER NOT NULL)")
    }
    migrator.registerMigration("v5: run numbers") { db in
      // The number of the last run that opened the database; the data directory records it too.
      try db.execute(sql: "ALTER TABLE brokerRun ADD COLUMN run INTEGER NOT NULL DEFAULT 0")
    }
    return migrator
  }

  /// Every topic with its cards and tombstones.
  ///
  /// - Throws: a ``StoredRowError`` for the first row that does not decode; GRDB's
  ///   error when the database cannot be read.
  public func loadTopics() async throws -> [TopicState] {
    // On the writer, so that no commit can land between the read and the versions it sets.
    try await database.writeWithoutTransaction { db in try self.readVersions(db) }
  }

  /// Reads every topic, and each card's live row and the superseded rows into ``versions``.
  ///
  /// A card's newest row is its live version, unless it is a tombstone at or below its topic's
  /// floor: one pruned, whose row waits to be deleted after the card's older rows. It and they
  /// are superseded.
  private func readVersions(_ db: Database) throws -> [TopicState] {
    let topics = try Row.fetchAll(db, sql: "SELECT name, epoch, topOffset, floorOffset FROM topic").map { row in
      try StoredRowError.decoding(row, of: "topic", in: Self.store) { row in
        (
          name: try row.decode(String.self, forColumn: "name"), epoch: try row.decode(Int64.self, forColumn: "epoch"),
          topOffset: try row.decode(Int64.self, forColumn: "topOffset"), floorOffset: try row.decode(Int64.self, forColumn: "floorOffset")
        )
      }
    }
    let floors = Dictionary(topics.map { ($0.name, $0.floorOffset) }, uniquingKeysWith: max)
    // In commit order: a card's last row is its live version, and supersedes those before.
    var latest: [CardKey: (seq: Int64, record: CardRecord)] = [:]
    var superseded: [Int64] = []
    let cards = try Row.fetchCursor(db, sql: "SELECT seq, topic, cardID, offset, card, changedAtMillis FROM cardVersion ORDER BY seq")
    // Copied: a copy's values convert strictly, where the cursor's own row reads an offset of 'x' as 0.
    while let row = try cards.next()?.copy() {
      let (key, seq, record) = try StoredRowError.decoding(row, of: "cardVersion", in: Self.store) { row in
        let card = try row.decode(Data?.self, forColumn: "card").map { try EncodedCard(serializedBytes: [UInt8]($0)) }
        let record = CardRecord(
          cardID: try row.decode(forColumn: "cardID"), offset: try row.decode(forColumn: "offset"), card: card,
          changedAtMillis: try row.decode(forColumn: "changedAtMillis"))
        let key = CardKey(topic: try row.decode(forColumn: "topic"), cardID: record.cardID)
        return (key, try row.decode(Int64.self, forColumn: "seq"), record)
      }
      if let previous = latest.updateValue((seq, record), forKey: key) { superseded.append(previous.seq) }
    }
    var live: [CardKey: Int64] = [:]
    var records: [String: [CardRecord]] = [:]
    for (key, version) in latest {
      if version.record.isTombstone, version.record.offset <= floors[key.topic] ?? 0 {
        superseded.append(version.seq)
      } else {
        live[key] = version.seq
        records[key.topic, default: []].append(version.record)
      }
    }
    versions.withLock { $0 = Versions(live: live, recent: superseded) }
    return topics.map { topic in
      TopicState(
        name: topic.name, epoch: topic.epoch, topOffset: topic.topOffset, floorOffset: topic.floorOffset,
        records: records[topic.name] ?? [])
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
            committedAtMillis: try row.decode(forColumn: "committedAtMillis"), fingerprint: try row.decode(Int64?.self, forColumn: "fingerprint"))
        }
      }
    }
  }

  public func commit(_ batch: StorageBatch) async throws {
    try await database.writeWithoutTransaction { db in
      // On the writer's queue, as close()'s mark: none lands after the log was emptied.
      guard !self.closed.withLock({ $0 }) else {
        throw RPCError(code: .unavailable, message: "the broker's storage is closed", retryAfterMillis: 1000)
      }
      if self.versions.withLock({ $0.live == nil }) { _ = try self.readVersions(db) }
      var journal = VersionJournal(recentBefore: self.versions.withLock { $0.recent.count })
      let now = ContinuousClock.now
      let run = self.numbering.withLock { $0.nextForCommit(at: now, interval: self.renumberingInterval) }
      do {
        try db.inTransaction {
          try self.write(batch, into: db, journal: &journal)
          if let run { try Self.setRun(run, in: db) }
          return .commit
        }
      } catch {
        self.putBack(journal)
        throw error
      }
      self.numbering.withLock { $0.committedSince = true }
      if let run { self.record(run, at: now) }
      // Until the open mark is in the file (a reader held the log at open): usually never.
      if !self.markInFile.withLock({ $0 }), (try? Self.checkpointsWholeLog(db)) == true {
        self.markInFile.withLock { $0 = true }
      }
    }
  }

  /// Writes `batch` within a transaction, noting in `journal` what it changes of the versions.
  private func write(_ batch: StorageBatch, into db: Database, journal: inout VersionJournal) throws {
    // Prepared once per connection and run once per topic and per change: see CommitStatement.
    let advance = try CommitStatement(
      """
      INSERT INTO topic (name, epoch, topOffset) VALUES (?, ?, ?)
      ON CONFLICT (name) DO UPDATE SET topOffset = max(topOffset, excluded.topOffset)
      """, in: db)
    let append = try CommitStatement(
      "INSERT INTO cardVersion (topic, cardID, offset, card, changedAtMillis) VALUES (?, ?, ?, ?, ?)", in: db)
    for topic in batch.topics {
      try advance.bind(topic.topic, at: 1)
      try advance.bind(topic.epoch, at: 2)
      try advance.bind(topic.topOffset, at: 3)
      try advance.run()
      for record in topic.records {
        try append.bind(topic.topic, at: 1)
        try append.bind(record.cardID, at: 2)
        try append.bind(record.offset, at: 3)
        try append.bind(record.changedAtMillis, at: 5)
        try append.run(binding: record.card, at: 4)
        setLive(db.lastInsertedRowID, of: CardKey(topic: topic.topic, cardID: record.cardID), journal: &journal)
      }
    }
    // A pruned tombstone, if it is still its card's live version, is superseded by nothing:
    // its row is deleted with the next collections, no sooner than the card's older rows
    // (deleted first, it would leave them to be read as the card's live version).
    let isTombstone = try db.cachedStatement(sql: "SELECT 1 FROM cardVersion WHERE seq = ? AND offset = ? AND card IS NULL")
    for prune in batch.prunes {
      for tombstone in prune.tombstones {
        let key = CardKey(topic: prune.topic, cardID: tombstone.cardID)
        guard let seq = versions.withLock({ $0.live?[key] }),
          try Bool.fetchOne(isTombstone, arguments: [seq, tombstone.offset]) == true
        else { continue }
        setLive(nil, of: key, journal: &journal)
      }
      try db.execute(
        sql: "UPDATE topic SET floorOffset = max(floorOffset, ?) WHERE name = ?", arguments: [prune.floorOffset, prune.topic])
    }
    if let cutoff = batch.forgetPublishRecordsBeforeMillis, batch.maxPublishRecordsToForget > 0 {
      // Found by the index on their age: a commit with nothing to forget looks at one entry.
      try db.cachedStatement(
        sql: """
          DELETE FROM publishRecord WHERE (topic, key) IN (
            SELECT topic, key FROM publishRecord WHERE committedAtMillis < ? ORDER BY committedAtMillis LIMIT ?)
          """
      ).execute(arguments: [cutoff, batch.maxPublishRecordsToForget])
    }
    let remember = try db.cachedStatement(
      sql: """
        INSERT OR REPLACE INTO publishRecord (topic, key, epoch, firstOffset, lastOffset, committedAtMillis, fingerprint)
        VALUES (?, ?, ?, ?, ?, ?, ?)
        """)
    for record in batch.publishRecords {
      try remember.execute(arguments: [
        record.topic, record.key, record.epoch, record.firstOffset, record.lastOffset, record.committedAtMillis, record.fingerprint,
      ])
    }
    for (name, epoch) in batch.newEpochs { try Self.setEpoch(epoch, of: name, in: db) }
    try collectIfDue(db, journal: &journal)
  }

  /// Makes `seq` `key`'s live row (`nil`: it has none now); the row it replaces is superseded.
  private func setLive(_ seq: Int64?, of key: CardKey, journal: inout VersionJournal) {
    let previous = versions.withLock { versions -> Int64? in
      let previous = if let seq { versions.live?.updateValue(seq, forKey: key) } else { versions.live?.removeValue(forKey: key) }
      if let previous { versions.recent.append(previous) }
      return previous
    }
    journal.replaced.append((key, previous))
  }

  /// Deletes superseded rows once there are twice as many as live cards, and at least
  /// ``collectionThreshold``: ``collectionBatch`` in one commit, or twice as many as it
  /// superseded if more (so that collecting keeps up with any rate), since a commit's latency
  /// grows with them; from the backlog, sorted, so that each old page is rewritten once — and when the
  /// backlog is done, the rows superseded since, sorted into a new one. A card's older rows are
  /// deleted no later than its pruned tombstone's.
  private func collectIfDue(_ db: Database, journal: inout VersionJournal) throws {
    let due = versions.withLock { versions -> ArraySlice<Int64>? in
      guard versions.supersededCount >= max(Self.collectionThreshold, 2 * (versions.live?.count ?? 0)) else { return nil }
      journal.beforeCollection = (versions.backlog, versions.recent)
      if versions.backlog.isEmpty {
        versions.backlog = ArraySlice(versions.recent.sorted())
        versions.recent = []
      }
      let count = max(Self.collectionBatch, 2 * journal.replaced.count)
      defer { versions.backlog = versions.backlog.dropFirst(count) }
      return versions.backlog.prefix(count)
    }
    guard let due else { return }
    let delete = try CommitStatement("DELETE FROM cardVersion WHERE seq = ?", in: db)
    for seq in due {
      try delete.bind(seq, at: 1)
      try delete.run()
    }
  }

  /// Undoes what a failed commit changed of the versions.
  private func putBack(_ journal: VersionJournal) {
    versions.withLock { versions in
      for (key, seq) in journal.replaced.reversed() {
        versions.live?[key] = seq
      }
      if let (backlog, recent) = journal.beforeCollection { (versions.backlog, versions.recent) = (backlog, recent) }
      versions.recent.removeSubrange(min(journal.recentBefore, versions.recent.count)...)
    }
  }
}
