import Foundation
import GRDB
@testable import PushlineBroker
import PushlineRPC
import PushlineSchema
import PushlineWire
import Synchronization
import PushlineTesting
import Testing

@Suite("SQLite storage: what a restarted broker still knows")
struct SQLiteBrokerStorageTests {
  let clock = ManualWallClock()
  let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-\(UInt64.random(in: 0...UInt64.max))").path

  func open() async throws -> Broker {
    try await Broker(
      storage: try SQLiteBrokerStorage(directory: directory),
      configuration: BrokerConfiguration(maxTombstonesPerTopic: 0, nowMillis: clock.function))
  }

  /// One broker run on the directory, stopped cleanly: `body` given the storage opened (to
  /// see what opening found) and a broker over it.
  @discardableResult
  func run<T>(_ body: (SQLiteBrokerStorage, Broker) async throws -> T) async throws -> T {
    let storage = try SQLiteBrokerStorage(directory: directory)
    let result = try await body(storage, try await Broker(storage: storage, configuration: BrokerConfiguration(nowMillis: clock.function)))
    try storage.close()
    return result
  }

  @Test func aRestartKeepsEpochsOffsetsCardsTombstonesAndKeys() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    var unknown = card("a", 1)
    unknown.unknownFields = try TrackerCard(serializedBytes: unknown.serializedBytes() + [0xA0, 0x06, 0x07]).unknownFields
    let first: PublishResponse
    do {
      let broker = try await open()
      first = try await broker.publish("t", [unknown, card("b", 1), card("c", 1)], key: "k")
      try await broker.publish("t", [], removing: ["b"])
    }
    let broker = try await open()
    let snapshot = try broker.cards(in: "t", for: reader)
    #expect(snapshot.epoch == first.epoch && snapshot.throughOffset == 4)
    #expect(snapshot.changes.map(\.cardID) == ["a", "c"])
    #expect(try snapshot.changes[0].card?.decoded() == unknown)  // unknown fields survive storage

    let resumed = try broker.subscribe("t", epoch: first.epoch, offset: 3)
    let updates = try resumed.takeReadyFromTheWire(maxChanges: 10, nowMillis: clock.now) ?? []
    #expect(updates.count == 1 && updates[0].changes.map(\.cardID) == ["b"] && updates[0].changes[0].card == nil)

    let retry = try await broker.publish("t", [unknown, card("b", 1), card("c", 1)], key: "k")
    #expect(retry.replayed == true && retry.firstOffset == 1)
    // The key's changes are remembered too: other changes under it are refused after a restart.
    await expectStatus(.invalidArgument) { try await broker.publish("t", [card("b", 2)], key: "k") }
    let next = try await broker.publish("t", [card("d", 1)])
    #expect(next.epoch == first.epoch && next.firstOffset == 5)
  }

  @Test func theFloorSurvivesARestart() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let removed = (0..<17).map { "r\($0)" }
    let last: PublishResponse
    do {
      let broker = try await open()
      try await broker.publish("t", removed.map { card($0, 1) })
      last = try await broker.publish("t", [], removing: removed)
      try await broker.publish("t", [card("x", 1)])  // the prune commits with or before this
    }
    let broker = try await open()
    let floor = broker.state.withLock { ($0.topics["t"]!.floorOffset, $0.topics["t"]!.tombstoneCount) }
    #expect(floor.0 == last.lastOffset && floor.1 == 0)
    let updates = try broker.subscribe("t", epoch: last.epoch, offset: 5).takeReadyFromTheWire(maxChanges: 10, nowMillis: clock.now) ?? []
    #expect(updates.first?.isSnapshot == true)
  }

  /// A broker that publishes "a" (with key "k") and then "b" to topic "t", its database file
  /// checkpointed in between, crashes; its log is then lost: the file is put back as the crash
  /// left it before "b", and the record of runs too, if `keepingTheRecordOfRuns` (a crash
  /// numbers no run at its close). Returns the publish of "b", which the directory lost.
  func crashLosingTheLog(keepingTheRecordOfRuns: Bool) async throws -> PublishResponse {
    let database = directory + "/broker.sqlite", crashImage = directory + "/image.sqlite", record = directory + "/broker.run"
    let seen: PublishResponse
    do {
      let broker = try await open()
      try await broker.publish("t", [card("a", 1)], key: "k")
      try await Self.databaseQueue(database).writeWithoutTransaction { _ = try $0.checkpoint(.full) }  // as SQLite's own do
      try FileManager.default.copyItem(atPath: database, toPath: crashImage)  // the file, as a crash leaves it
      if keepingTheRecordOfRuns { try FileManager.default.copyItem(atPath: record, toPath: crashImage + ".run") }
      seen = try await broker.publish("t", [card("b", 1)])
    }
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database + suffix) }
    try FileManager.default.moveItem(atPath: crashImage, toPath: database)
    if keepingTheRecordOfRuns {
      try FileManager.default.removeItem(atPath: record)
      try FileManager.default.moveItem(atPath: crashImage + ".run", toPath: record)
    }
    return seen
  }

  /// A crashed broker's database whose write-ahead log was then deleted (or restored without
  /// it) lost the commits since its last checkpoint: their offsets would be given out again in
  /// the epoch clients saw them in, so every topic gets a new epoch, and a client's position in
  /// the old one is answered with a snapshot.
  @Test func aCrashedDatabaseWithoutItsLogRenewsEveryEpoch() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let seen = try await crashLosingTheLog(keepingTheRecordOfRuns: false)
    let storage = try SQLiteBrokerStorage(directory: directory)
    #expect(storage.epochRenewal == .writeAheadLogLost)
    let broker = try await Broker(storage: storage, configuration: BrokerConfiguration(nowMillis: clock.function))
    let next = try await broker.publish("t", [card("c", 1)])
    #expect(next.epoch != seen.epoch)
    let updates = try broker.subscribe("t", epoch: seen.epoch, offset: seen.lastOffset)
      .takeReadyFromTheWire(maxChanges: 10, nowMillis: clock.now) ?? []
    #expect(updates.first?.isSnapshot == true)
    // A retry of what the image kept is answered in the topic's new epoch.
    let retry = try await broker.publish("t", [card("a", 1)], key: "k")
    #expect(retry.replayed == true && retry.epoch == next.epoch)
  }

  /// A start that finds the log lost and is killed before the database records it — after the
  /// database opened, which writes a log of its own — leaves that log behind, and its note of
  /// the missing log: the next start renews every epoch all the same, rather than take the new
  /// log for the lost one and give the lost offsets out again in the epoch clients saw them in.
  @Test func aStartKilledAfterFindingTheLogLostLeavesTheNextToRenew() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let database = directory + "/broker.sqlite"
    // The record of runs as the crash left it too: it alone does not tell the file from the
    // crashed run's.
    let seen = try await crashLosingTheLog(keepingTheRecordOfRuns: true)
    // The killed start, as far as it got: the directory taken, the note written, the database
    // opened (GRDB writes into a new log as it turns WAL mode on), then nothing: its files,
    // copied while it holds them, are what a SIGKILL leaves.
    let left = directory + "/left"
    do {
      let held = try DataDirectory(path: directory, waiting: .seconds(5))
      try held.noteMissingLog()
      let killed = try DatabasePool(path: database)
      try FileManager.default.createDirectory(atPath: left, withIntermediateDirectories: false)
      for name in ["broker.sqlite", "broker.sqlite-wal", "broker.run", "broker.log-missing"] {
        try FileManager.default.copyItem(atPath: directory + "/" + name, toPath: left + "/" + name)
      }
      try killed.close()
    }
    let log = try FileManager.default.attributesOfItem(atPath: left + "/broker.sqlite-wal")[.size] as? Int
    #expect((log ?? 0) > 0)

    let storage = try SQLiteBrokerStorage(directory: left)
    #expect(storage.epochRenewal == .writeAheadLogLost)
    #expect(!FileManager.default.fileExists(atPath: left + "/broker.log-missing"))
    let broker = try await Broker(storage: storage, configuration: BrokerConfiguration(nowMillis: clock.function))
    let next = try await broker.publish("t", [card("c", 1)])
    #expect(next.epoch != seen.epoch)
  }

  /// A backup restored over the database — a copy taken after a clean stop, while later runs
  /// gave out more offsets — is older than the directory's last run: every topic gets a new
  /// epoch, rather than the offsets clients saw given out again to other changes.
  @Test func aRestoredBackupOlderThanTheLastRunRenewsEveryEpoch() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let database = directory + "/broker.sqlite", backup = directory + "/backup.sqlite"
    try await run { _, broker in try await broker.publish("t", [card("a", 1)]) }
    try FileManager.default.copyItem(atPath: database, toPath: backup)
    let seen = try await run { storage, broker in
      #expect(storage.epochRenewal == nil)
      return try await broker.publish("t", [card("b", 1)])
    }
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database + suffix) }
    try FileManager.default.moveItem(atPath: backup, toPath: database)
    try await run { storage, broker in
      #expect(storage.epochRenewal == .databaseOlderThanLastRun)
      let next = try await broker.publish("t", [card("c", 1)])
      #expect(next.epoch != seen.epoch && next.firstOffset == seen.firstOffset)  // the offset again, in a new epoch
      let updates = try broker.subscribe("t", epoch: seen.epoch, offset: seen.lastOffset)
        .takeReadyFromTheWire(maxChanges: 10, nowMillis: clock.now) ?? []
      #expect(updates.first?.isSnapshot == true)
    }
    // Renewed once: the next start finds the database as recent as the directory's last run.
    try await run { storage, _ in #expect(storage.epochRenewal == nil) }
  }

  /// A copy of the database and its log taken while the broker runs (a volume snapshot of the
  /// two files), restored alone after a later commit, is older than the directory's last run:
  /// the commit carries the run's next number once the renumbering interval has passed since
  /// the last (here at once, though it is the run's first commit) — so a crash after it leaves
  /// a record ahead of the copy — and so does a close after commits. Every topic gets a new epoch.
  @Test(arguments: [true, false]) func aCopyTakenWhileTheBrokerRanIsOlderOnceACommitFollowsIt(crashes: Bool) async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let (database, copy, image) = (directory + "/broker.sqlite", directory + "/copy", directory + "/image")
    try await run { _, broker in try await broker.publish("t", [card("a", 1)]) }
    let seen: PublishResponse
    do {
      let storage = try SQLiteBrokerStorage(directory: directory, renumberingInterval: crashes ? .zero : .seconds(3600))
      let broker = try await Broker(storage: storage, configuration: BrokerConfiguration(nowMillis: clock.function))
      try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: false)
      for suffix in ["", "-wal"] { try FileManager.default.copyItem(atPath: database + suffix, toPath: copy + "/broker.sqlite" + suffix) }
      seen = try await broker.publish("t", [card("b", 1)])
      if crashes {
        // The directory as a crash leaves it now: its record of runs, with the copy restored.
        try FileManager.default.createDirectory(atPath: image, withIntermediateDirectories: false)
        try FileManager.default.copyItem(atPath: directory + "/broker.run", toPath: image + "/broker.run")
      } else {
        try storage.close()
      }
    }
    let restored = crashes ? image : directory
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: restored + "/broker.sqlite" + suffix) }
    for suffix in ["", "-wal"] { try FileManager.default.moveItem(atPath: copy + "/broker.sqlite" + suffix, toPath: restored + "/broker.sqlite" + suffix) }
    let storage = try SQLiteBrokerStorage(directory: restored)
    #expect(storage.epochRenewal == .databaseOlderThanLastRun)
    let broker = try await Broker(storage: storage, configuration: BrokerConfiguration(nowMillis: clock.function))
    let next = try await broker.publish("t", [card("c", 1)])
    #expect(next.epoch != seen.epoch && next.firstOffset == seen.firstOffset)  // the offset again, in a new epoch
  }

  /// The run's number moves on with the first commit once the interval has passed since it last
  /// did — not with the others — and at a close when a commit went in since; a run that commits
  /// nothing after its number last moved keeps it at its close.
  @Test func theRunIsNumberedAtMostOnceAnIntervalAndAtACloseAfterCommits() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    func recorded() throws -> String { try String(contentsOfFile: directory + "/broker.run", encoding: .utf8) }
    func run(every interval: Duration, _ body: (Broker) async throws -> Void) async throws {
      let storage = try SQLiteBrokerStorage(directory: directory, renumberingInterval: interval)
      try await body(try await Broker(storage: storage, configuration: BrokerConfiguration(nowMillis: clock.function)))
      try storage.close()
    }
    try await run(every: .seconds(3600)) { broker in
      for version in 1...2 { try await broker.publish("t", [card("a", version)]) }
      #expect(try recorded() == "1\n")
    }
    #expect(try recorded() == "2\n")
    try await run(every: .seconds(3600)) { _ in
      let number = try recorded()
      #expect(number == "3\n")
    }
    #expect(try recorded() == "3\n")
    try await run(every: .zero) { broker in
      #expect(try recorded() == "4\n")
      try await broker.publish("t", [card("a", 3)])
      #expect(try recorded() == "5\n")
      try await broker.publish("t", [card("a", 4)])
      #expect(try recorded() == "6\n")
    }
    #expect(try recorded() == "6\n")
  }

  /// A close that cannot empty the log — a reader holds it (a backup tool copying the files)
  /// past SQLite's wait — fails, and still records the run's new number, which the database
  /// holds already: a copy taken during the run is older than the record.
  @Test(.timeLimit(.minutes(1))) func aCloseThatCannotEmptyTheLogStillRecordsTheNewNumber() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let storage = try SQLiteBrokerStorage(directory: directory, renumberingInterval: .seconds(3600))
    try await Broker(storage: storage).publish("t", [card("a", 1)])
    let (reading, read) = AsyncStream<Void>.makeStream()
    let letGo = DispatchSemaphore(value: 0)
    let reader = Thread { [directory] in
      try? DatabaseQueue(path: directory + "/broker.sqlite").read { db in
        _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM cardVersion")
        read.finish()
        letGo.wait()
      }
    }
    reader.start()
    for await _ in reading {}
    #expect(throws: (any Error).self) { try storage.close() }
    letGo.signal()
    #expect(try String(contentsOfFile: directory + "/broker.run", encoding: .utf8) == "2\n")
  }

  /// A record of runs that does not read as one (damaged) cannot say whether the database is
  /// older: every topic gets a new epoch, and the record is written anew.
  @Test func anUnreadableRecordOfRunsRenewsEveryEpoch() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let first = try await run { _, broker in try await broker.publish("t", [card("a", 1)]) }
    try "9223372036854775807\n".write(toFile: directory + "/broker.run", atomically: false, encoding: .utf8)
    try await expectOneRenewal(.runRecordUnreadable, after: first, recording: 3)  // past the first run's close: 2
  }

  /// A database that counts runs, found without the directory's record of them (removed, or
  /// the database copied alone into another directory), cannot tell whether it is older: every
  /// topic gets a new epoch. One from before runs were counted opens as it is, and the record
  /// starts.
  @Test func aMissingRecordOfRunsRenewsUnlessTheDatabaseCountsNone() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let first = try await run { _, broker in try await broker.publish("t", [card("a", 1)]) }
    try FileManager.default.removeItem(atPath: directory + "/broker.run")
    let renewed = try await run { storage, broker in
      let next = try await broker.publish("t", [card("b", 1)])
      #expect(storage.epochRenewal == .runRecordMissing && next.epoch != first.epoch)
      return next
    }
    // A database from before runs were counted (as migrated, run 0), without a record.
    try await Self.databaseQueue(directory + "/broker.sqlite").write { try $0.execute(sql: "UPDATE brokerRun SET run = 0") }
    try FileManager.default.removeItem(atPath: directory + "/broker.run")
    try await run { storage, broker in
      let next = try await broker.publish("t", [card("c", 1)])
      #expect(storage.epochRenewal == nil && next.epoch == renewed.epoch)
    }
    #expect(FileManager.default.fileExists(atPath: directory + "/broker.run"))
  }

  /// A start that fails once it has marked the database open (here, its record of runs cannot
  /// be written) lost nothing: the next start does not take it for a crash. Nor, for a database
  /// from before runs were counted (run 0, no record), for one whose record was removed: its
  /// first counted start, stopped before the directory records it (a kill there is alike),
  /// renews nothing.
  @Test(arguments: [false, true]) func aStartThatFailsLateIsNotTakenForACrash(countingNoRunsYet: Bool) async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let first = try await run { _, broker in try await broker.publish("t", [card("a", 1)]) }
    if countingNoRunsYet {
      try await Self.databaseQueue(directory + "/broker.sqlite").write { try $0.execute(sql: "UPDATE brokerRun SET run = 0") }
      try FileManager.default.removeItem(atPath: directory + "/broker.run")
    }
    let blocker = directory + "/broker.run.new"
    try FileManager.default.createDirectory(atPath: blocker, withIntermediateDirectories: false)
    #expect(throws: DataDirectoryError.self) { try SQLiteBrokerStorage(directory: directory) }
    try FileManager.default.removeItem(atPath: blocker)
    try await run { storage, broker in
      let next = try await broker.publish("t", [card("b", 1)])
      #expect(storage.epochRenewal == nil && next.epoch == first.epoch)
    }
  }

  /// Run numbers start again, once exhausted (a record tampered with), only with a renewal:
  /// after it, a backup numbered anywhere below the old count would pass for newer than the
  /// record. Here a record one short of the last number renews (the database is older), and
  /// leaves both at the last number; the start after it is the one that starts again.
  @Test func numberingStartsAgainOnlyWithARenewal() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    try await run { _, broker in try await broker.publish("t", [card("a", 1)]) }
    try "\(DataDirectory.maxRun - 1)\n".write(toFile: directory + "/broker.run", atomically: false, encoding: .utf8)
    let renewed = try await run { storage, broker in
      #expect(storage.epochRenewal == .databaseOlderThanLastRun)
      return try await broker.publish("t", [card("b", 1)])
    }
    #expect(try String(contentsOfFile: directory + "/broker.run", encoding: .utf8) == "\(DataDirectory.maxRun)\n")
    try await expectOneRenewal(.runRecordUnreadable, after: renewed, recording: 1)
  }

  /// Expects the next start to renew every epoch for `renewal` (a publish lands in another
  /// epoch than `seen`'s) and record `run` as its number, and the start after it to renew none.
  func expectOneRenewal(_ renewal: EpochRenewal, after seen: PublishResponse, recording run: Int64) async throws {
    try await self.run { storage, broker in
      #expect(try String(contentsOfFile: directory + "/broker.run", encoding: .utf8) == "\(run)\n")
      let next = try await broker.publish("t", [card("z", 1)])
      #expect(storage.epochRenewal == renewal && next.epoch != seen.epoch)
    }
    try await self.run { storage, _ in #expect(storage.epochRenewal == nil) }
  }

  /// A pipe where the record of runs goes, or its next copy (an operator's mistake), is
  /// refused at once, as a link is: the start is not left waiting for a peer that never comes.
  @Test func aPipeAtTheRecordOfRunsIsRefusedNotWaitedOn() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    try await run { _, broker in try await broker.publish("t", [card("a", 1)]) }
    for name in ["broker.run.new", "broker.run"] {
      let pipe = directory + "/" + name
      try? FileManager.default.removeItem(atPath: pipe)
      #expect(mkfifo(pipe, 0o644) == 0)
      #expect(throws: DataDirectoryError.self) { try Self.openStorage(in: directory, notWaitingAt: pipe) }
      try FileManager.default.removeItem(atPath: pipe)
    }
  }

  /// Opens storage in `directory` on a thread of its own; a start still waiting after ten
  /// seconds is recorded as an issue and let go by opening `pipe` from this end (both ways,
  /// which never blocks on Linux), so that a regression fails the test instead of hanging it.
  static func openStorage(in directory: String, notWaitingAt pipe: String) throws {
    let outcome = Mutex<Result<SQLiteBrokerStorage, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Thread {
      let opened = Result { try SQLiteBrokerStorage(directory: directory) }
      outcome.withLock { $0 = opened }
      done.signal()
    }.start()
    if done.wait(timeout: .now() + 10) == .timedOut {
      Issue.record("the start waited at \(pipe)")
      let peer = Glibc.open(pipe, O_RDWR | O_NONBLOCK)
      defer { close(peer) }
      done.wait()
    }
    _ = try outcome.withLock { $0! }.get()
  }

  /// A start killed while it renewed the epochs (a long transaction, which leaves a log of its
  /// own) is followed by one that renews them: the renewal was noted first, on its own.
  @Test func aRenewalCutShortIsRenewedByTheNextStart() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let first: PublishResponse
    do {
      let storage = try SQLiteBrokerStorage(directory: directory)
      first = try await Broker(storage: storage).publish("t", [card("a", 1)])
      try storage.close()
    }
    // What the killed start left: its note, committed in a log of its own (kept open here, so
    // that it stays), and not its renewal.
    let killed = try Self.databaseQueue(directory + "/broker.sqlite")
    try await killed.write { try $0.execute(sql: "UPDATE brokerRun SET unclosed = 2") }
    let storage = try SQLiteBrokerStorage(directory: directory)
    #expect(storage.epochRenewal == .renewalCutShort)
    #expect(try await Broker(storage: storage).publish("t", [card("b", 1)]).epoch != first.epoch)
    withExtendedLifetime(killed) {}
  }

  /// A reader holding an old snapshot at open (a backup tool) does not keep the broker from
  /// starting, and the open mark reaches the database file with the first commit after it
  /// lets go: a log lost then is still noticed.
  @Test(.timeLimit(.minutes(1))) func theOpenMarkReachesTheFileOnceAReaderLetsGo() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let database = directory + "/broker.sqlite"
    try SQLiteBrokerStorage(directory: directory).close()  // made, and marked closed
    let (reading, read) = AsyncStream<Void>.makeStream()
    let letGo = DispatchSemaphore(value: 0)
    let reader = Thread {
      try? DatabaseQueue(path: database).read { db in
        _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM topic")
        read.finish()
        letGo.wait()
      }
    }
    reader.start()
    for await _ in reading {}
    let storage = try SQLiteBrokerStorage(directory: directory)
    func markInFile() throws -> Int? {
      let copy = directory + "/copy.sqlite"
      try? FileManager.default.removeItem(atPath: copy)
      try FileManager.default.copyItem(atPath: database, toPath: copy)  // the file alone, no log
      return try DatabaseQueue(path: copy).read { try Int.fetchOne($0, sql: "SELECT unclosed FROM brokerRun") }
    }
    #expect(try markInFile() == 0)  // the reader held the log back
    letGo.signal()
    try await Broker(storage: storage).publish("t", [card("a", 1)])
    #expect(try markInFile() == 1)
  }

  /// A broker that closed its database folded the log into it: without the log, nothing is
  /// lost, and the epochs stay. So does a crashed broker's database with its log.
  @Test func aClosedDatabaseOrACrashedOneWithItsLogKeepsItsEpochs() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let database = directory + "/broker.sqlite", image = directory + "/image"
    let first: PublishResponse
    do {
      let storage = try SQLiteBrokerStorage(directory: directory)
      let broker = try await Broker(storage: storage)
      first = try await broker.publish("t", [card("a", 1)])
      try storage.close()
      #expect(try FileManager.default.attributesOfItem(atPath: database + "-wal")[.size] as? Int == 0)
      try FileManager.default.removeItem(atPath: database + "-wal")
    }
    let crashed: PublishResponse
    do {
      let storage = try SQLiteBrokerStorage(directory: directory)
      #expect(storage.epochRenewal == nil)
      crashed = try await Broker(storage: storage).publish("t", [card("b", 1)])
      #expect(crashed.epoch == first.epoch && crashed.firstOffset == 2)
      try FileManager.default.createDirectory(atPath: image, withIntermediateDirectories: false)
      // The directory as the crash left it: its database, log and record of runs.
      for suffix in ["", "-wal"] { try FileManager.default.copyItem(atPath: database + suffix, toPath: image + "/broker.sqlite" + suffix) }
      try FileManager.default.copyItem(atPath: directory + "/broker.run", toPath: image + "/broker.run")
    }
    let storage = try SQLiteBrokerStorage(directory: image)
    #expect(storage.epochRenewal == nil)
    let next = try await Broker(storage: storage).publish("t", [card("c", 1)])
    #expect(next.epoch == first.epoch && next.firstOffset == crashed.lastOffset + 1)
  }

  /// One broker per data directory: a second storage on it is refused, naming the process
  /// that holds it, and the directory opens again once the first storage has gone (as it does
  /// when a killed broker's process dies).
  @Test func aSecondBrokerOnTheSameDirectoryIsRefused() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    do {
      let first = try SQLiteBrokerStorage(directory: directory)
      let refusal = withExtendedLifetime(first) {
        #expect(throws: DataDirectoryInUseError.self) { try SQLiteBrokerStorage(directory: directory, lockTimeout: .zero) }
      }
      #expect(refusal == DataDirectoryInUseError(directory: directory, holder: getpid()))
    }
    let reopened = try await Broker(storage: try SQLiteBrokerStorage(directory: directory))
    #expect(try await reopened.publish("t", [card("a", 1)]).firstOffset == 1)
  }

  /// Deleting `broker.lock` from under a running broker (clearing "stale" locks) does not let
  /// a second one in: the directory itself is locked, and two brokers on one directory would
  /// give the same offsets to different changes.
  @Test func aDeletedLockFileDoesNotLetASecondBrokerIn() throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let first = try SQLiteBrokerStorage(directory: directory)
    try FileManager.default.removeItem(atPath: (directory as NSString).appendingPathComponent("broker.lock"))
    let refusal = withExtendedLifetime(first) {
      #expect(throws: DataDirectoryInUseError.self) { try SQLiteBrokerStorage(directory: directory, lockTimeout: .zero) }
    }
    #expect(refusal != nil)
  }

  /// A broker restarted while its previous one still holds the directory (a process still
  /// exiting) waits for it, and takes the directory as soon as it is let go of. The second
  /// waits on a thread of its own, as a broker starting does: blocking one of the concurrency
  /// pool's few threads, it could starve the task that lets go of the first (under a loaded
  /// parallel run, it did).
  @Test func aDirectoryStillHeldIsWaitedFor() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let (waiting, wait) = AsyncStream<Void>.makeStream()
    let (taken, take) = AsyncStream<Result<Void, any Error>>.makeStream()
    do {
      let first = try DataDirectory(path: directory, waiting: .zero)
      Thread.detachNewThread { [directory] in
        defer { wait.finish() }  // a second that does not wait ends the test at once
        take.yield(Result { _ = try DataDirectory(path: directory, waiting: .seconds(30), whenWaiting: { wait.finish() }) })
        take.finish()
      }
      for await _ in waiting {}  // the second found the directory held, or gave up
      withExtendedLifetime(first) {}
    }
    var results = taken.makeAsyncIterator()
    try #require(await results.next()).get()
  }

  /// A data directory that cannot be made is refused with the system's reason, as an operator
  /// reads it, not Foundation's dictionary of an error.
  @Test func aDirectoryThatCannotBeMadeIsRefusedWithTheSystemsReason() throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let file = directory + "/a-file"
    #expect(FileManager.default.createFile(atPath: file, contents: Data()))
    let error = #expect(throws: DataDirectoryError.self) { try SQLiteBrokerStorage(directory: file + "/data") }
    #expect(error == DataDirectoryError(action: "create", path: file, errno: ENOTDIR))
    #expect(error?.description == "cannot create \(file): Not a directory")
  }

  /// A new database gets 16 KiB pages; one made before keeps its 4 KiB pages and still serves.
  @Test func aNewDatabaseHasLargePagesAndAnOldOneKeepsItsOwn() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let new = directory + "/new", old = directory + "/old"
    func pageSize(in directory: String) throws -> Int? {
      try Self.databaseQueue(directory + "/broker.sqlite").read { try Int.fetchOne($0, sql: "PRAGMA page_size") }
    }
    _ = try SQLiteBrokerStorage(directory: new)
    #expect(try pageSize(in: new) == 16384)

    try FileManager.default.createDirectory(atPath: old, withIntermediateDirectories: true)
    try await Self.databaseQueue(old + "/broker.sqlite").writeWithoutTransaction { db in
      _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
      try db.execute(sql: "CREATE TABLE earlier (x)")
    }
    let before = try await Broker(storage: try SQLiteBrokerStorage(directory: old)).publish("t", [card("a", 1)])
    let after = try await Broker(storage: try SQLiteBrokerStorage(directory: old)).cards(in: "t", for: reader)
    #expect(try pageSize(in: old) == 4096)
    #expect(after.epoch == before.epoch && after.changes.map(\.cardID) == ["a"])
  }

  /// An acknowledged publish must survive the machine's crash, not only the process's: each
  /// commit waits for the disk. GRDB turns WAL mode on with `synchronous = NORMAL`, which syncs
  /// only at checkpoints; the storage's own setting has to win over it.
  @Test func eachCommitWaitsForTheDisk() throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let storage = try SQLiteBrokerStorage(directory: directory)
    #expect(try storage.writerSynchronousLevel() == 2)
  }

  /// Cards are appended as versions, and the versions they supersede are deleted many at a
  /// time: a card published ten thousand times leaves a bounded table, across a restart (which
  /// finds the superseded rows the first run left), and comes back at its last version.
  @Test func supersededVersionsAreDeletedAcrossARestart() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    func rows() throws -> Int {
      try Self.databaseQueue(directory + "/broker.sqlite").read { try Int.fetchOne($0, sql: "SELECT count(*) FROM cardVersion") ?? -1 }
    }
    do {
      let broker = try await open()
      try await broker.publish("t", [card("b", 1)])
      for version in 1...3000 { try await broker.publish("t", [card("a", version)]) }
    }
    #expect(try rows() == 3001)  // under the threshold: nothing deleted yet
    do {
      let broker = try await open()
      for version in 3001...4500 { try await broker.publish("t", [card("a", version)]) }
      let left = try rows()
      #expect(left >= 2 && left < SQLiteBrokerStorage.collectionThreshold, "\(left) rows")
    }
    let again = try await open()
    let cards = try again.cards(in: "t", for: reader).changes
    let last = try cards.last?.card?.decoded()
    #expect(cards.map(\.cardID) == ["b", "a"] && last == card("a", 4500))
  }

  /// Expired idempotency records are deleted from storage a bounded number per commit, oldest
  /// first, not all at once; one within the window stays, and answers a retry after a restart.
  @Test func expiredPublishRecordsAreDeletedAFewPerCommit() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let configuration = BrokerConfiguration(idempotencyWindow: .seconds(10), nowMillis: clock.function)
    func rows() throws -> Int {
      try Self.databaseQueue(directory + "/broker.sqlite").read { try Int.fetchOne($0, sql: "SELECT count(*) FROM publishRecord") ?? -1 }
    }
    let perCommit = Broker.publishRecordsForgottenPerCommit
    let young: PublishResponse
    do {
      let broker = try await Broker(storage: try SQLiteBrokerStorage(directory: directory), configuration: configuration)
      try await withThrowingTaskGroup(of: Void.self) { group in  // in a few group commits
        for index in 0..<(perCommit + 500) {
          group.addTask { try await broker.publish("t", [card("c\(index)", 1)], key: "k\(index)") }
        }
        try await group.waitForAll()
      }
      #expect(try rows() == perCommit + 500)
      clock.advance(by: .seconds(11))
      young = try await broker.publish("t", [card("y", 1)], key: "young")
      #expect(try rows() == 500 + 1)
      try await broker.publish("t", [card("y", 2)])
      #expect(try rows() == 1)
    }
    let restarted = try await Broker(storage: try SQLiteBrokerStorage(directory: directory), configuration: configuration)
    let retry = try await restarted.publish("t", [card("y", 1)], key: "young")
    #expect(retry.replayed == true && retry.firstOffset == young.firstOffset)
  }

  /// A wall clock stepped back (NTP, a virtual machine resumed) does not make storage forget,
  /// within its window, a record that memory keeps: a retry after a restart is still a replay.
  @Test func aClockSteppedBackForgetsNoRecordWithinItsWindow() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let published: PublishResponse
    do {
      let broker = try await open()
      try await broker.publish("t", [card("a", 1)], key: "a")
      clock.advance(by: .seconds(-1))
      published = try await broker.publish("t", [card("b", 1)], key: "b")
      try await broker.publish("t", [card("c", 1)])  // a commit that forgets what has expired
    }
    let restarted = try await open()
    let retry = try await restarted.publish("t", [card("b", 1)], key: "b")
    #expect(retry.replayed == true && retry.firstOffset == published.firstOffset)
  }

  /// Storage forgets the records memory forgot past the most kept, though still in their window.
  @Test func recordsPastTheMostKeptAreDeleted() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let broker = try await Broker(
      storage: try SQLiteBrokerStorage(directory: directory), configuration: BrokerConfiguration(maxPublishRecords: 2, nowMillis: clock.function))
    for index in 0..<5 {
      try await broker.publish("t", [card("c\(index)", 1)], key: "k\(index)")
      clock.advance(by: .milliseconds(1))
    }
    try await broker.publish("t", [card("x", 1)])
    let keys = try await Self.databaseQueue(directory + "/broker.sqlite").read { try String.fetchAll($0, sql: "SELECT key FROM publishRecord ORDER BY key") }
    #expect(keys == ["k3", "k4"])
  }

  /// A removed card whose tombstone is pruned stays removed across a restart, though its
  /// older versions are still stored (deleted with the next collection): neither they nor the
  /// tombstone, below the floor, come back.
  @Test func aPrunedTombstoneDoesNotBringItsCardBack() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let removed = (0..<17).map { "x\($0)" }  // past the tombstones' slack: they are pruned
    do {
      let broker = try await open()
      try await broker.publish("t", removed.map { card($0, 1) } + [card("y", 1)])
      try await broker.publish("t", removed.map { card($0, 2) })
      try await broker.publish("t", [], removing: removed)
      try await broker.publish("t", [card("y", 2)])  // the prune commits with or before this
    }
    do {
      let broker = try await open()
      #expect(try broker.cards(in: "t", for: reader).changes.map(\.cardID) == ["y"])
      #expect(broker.state.withLock { $0.topics["t"]!.tombstoneCount } == 0)
      try await broker.publish("t", [card("x3", 3)])  // a card of that ID again: new, and live
    }
    #expect(try await open().cards(in: "t", for: reader).changes.map(\.cardID) == ["y", "x3"])
    // Once enough is superseded to collect, the removed cards' rows go, tombstones included.
    do {
      let again = try await open()
      for version in 3...(SQLiteBrokerStorage.collectionThreshold + 3) { try await again.publish("t", [card("y", version)]) }
    }
    let left = try await Self.databaseQueue(directory + "/broker.sqlite").read { db in
      try String.fetchAll(db, sql: "SELECT cardID FROM cardVersion WHERE cardID LIKE 'x%'")
    }
    #expect(left == ["x3"])
    #expect(try await open().cards(in: "t", for: reader).changes.map(\.cardID) == ["x3", "y"])
  }

  /// A commit that fails leaves the storage's idea of each card's live row as it was: the
  /// rows it wrote are rolled back, and their numbers are used again by the next commit — a
  /// live row wrongly marked superseded would be deleted by the next collection, and its card
  /// lost at the next start.
  @Test func aFailedCommitLeavesNoWrongIdeaOfTheLiveRows() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    do {
      let broker = try await open()
      try await broker.publish("t", [card("x", 1)])
      try await Self.databaseQueue(directory + "/broker.sqlite").write { db in
        try db.execute(sql: "CREATE TRIGGER boom BEFORE INSERT ON cardVersion WHEN NEW.cardID = 'boom' BEGIN SELECT RAISE(ABORT, 'boom'); END")
      }
      await #expect(throws: RPCError.self) { try await broker.publish("t", [card("x", 2), card("boom", 1)]) }
      try await broker.publish("t", [card("y", 1)])
      try await broker.publish("t", [card("x", 3)])
      for version in 1...(SQLiteBrokerStorage.collectionThreshold + 10) { try await broker.publish("t", [card("z", version)]) }
    }
    let cards = try await open().cards(in: "t", for: reader).changes
    let decoded = try Dictionary(uniqueKeysWithValues: cards.map { ($0.cardID, try $0.card?.decoded()) })
    #expect(decoded == ["x": card("x", 3), "y": card("y", 1), "z": card("z", SQLiteBrokerStorage.collectionThreshold + 10)])
  }

  /// A broker restarted on its storage goes on from the last offset committed: it gives again
  /// the offsets of a publish whose write failed just before — no one was told of them, the
  /// publish was refused and nothing delivered — and never an acknowledged one (PROTOCOL.md 3.1).
  @Test func aRestartGivesAgainOnlyTheOffsetsOfAFailedWrite() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let first: PublishResponse
    do {
      let broker = try await open()
      first = try await broker.publish("t", [card("a", 1)])
      try await Self.databaseQueue(directory + "/broker.sqlite").write { db in
        try db.execute(sql: "CREATE TRIGGER boom BEFORE INSERT ON cardVersion WHEN NEW.cardID = 'boom' BEGIN SELECT RAISE(ABORT, 'boom'); END")
      }
      await #expect(throws: RPCError.self) { try await broker.publish("t", [card("boom", 1)]) }
    }
    let broker = try await open()
    let resumed = try broker.subscribe("t", epoch: first.epoch, offset: first.lastOffset)
    let next = try await broker.publish("t", [card("b", 1)])
    #expect(next.epoch == first.epoch && next.firstOffset == first.lastOffset + 1)
    let updates = try resumed.takeReadyFromTheWire(maxChanges: 10, nowMillis: clock.now) ?? []
    #expect(updates.flatMap(\.changes).map(\.cardID) == ["b"])
  }

  /// A data directory written before cards were stored as versions (a `card` table keyed by
  /// topic and card) opens with its cards, offsets and tombstones.
  @Test func aDatabaseFromBeforeCardVersionsOpensWithItsCards() async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    try await Self.databaseQueue(directory + "/broker.sqlite").writeWithoutTransaction { db in
      _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
      try db.execute(
        sql: """
          CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
          INSERT INTO grdb_migrations VALUES ('v1');
          CREATE TABLE topic (name TEXT PRIMARY KEY NOT NULL, epoch INTEGER NOT NULL, topOffset INTEGER NOT NULL,
            floorOffset INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
          CREATE TABLE card (topic TEXT NOT NULL, cardID TEXT NOT NULL, offset INTEGER NOT NULL, card BLOB,
            changedAtMillis INTEGER NOT NULL, PRIMARY KEY (topic, cardID)) WITHOUT ROWID;
          CREATE TABLE publishRecord (topic TEXT NOT NULL, key TEXT NOT NULL, epoch INTEGER NOT NULL,
            firstOffset INTEGER NOT NULL, lastOffset INTEGER NOT NULL, committedAtMillis INTEGER NOT NULL,
            PRIMARY KEY (topic, key)) WITHOUT ROWID;
          INSERT INTO topic VALUES ('t', 77, 3, 0);
          """)
      try db.execute(sql: "INSERT INTO card VALUES ('t', 'a', 3, ?, 0)", arguments: [Data(card("a", 2).serializedBytes())])
      try db.execute(sql: "INSERT INTO card VALUES ('t', 'b', 2, NULL, 0)")
    }
    let broker = try await open()
    let snapshot = try broker.cards(in: "t", for: reader)
    #expect(snapshot.epoch == 77 && snapshot.throughOffset == 3 && snapshot.changes.map(\.cardID) == ["a"])
    let resumed = try broker.subscribe("t", epoch: 77, offset: 1).takeReadyFromTheWire(maxChanges: 10, nowMillis: clock.now) ?? []
    #expect(resumed.flatMap(\.changes).map(\.cardID) == ["b", "a"] && resumed.first?.changes.first?.card == nil)
    let next = try await broker.publish("t", [card("a", 3)])
    #expect(next.firstOffset == 4)
  }

  /// The test's own connection to a broker's database, waiting up to 5 s for it as the
  /// broker's storage does: a storage just let go of may still be closing it (its last
  /// checkpoint), and without a wait the open fails with "database is locked".
  static func databaseQueue(_ path: String) throws -> DatabaseQueue {
    var configuration = Configuration()
    configuration.busyMode = .timeout(5)
    return try DatabaseQueue(path: path, configuration: configuration)
  }

  /// A database whose value is not of its column's type (damaged, or written by something
  /// else) stops the broker's start with a ``StoredRowError`` naming the table and the
  /// column — not a crash, and not a silent 0 for an offset.
  @Test("a value of the wrong type", arguments: [
    ("UPDATE topic SET epoch = 'x'", "topic", "column: \"epoch\""),
    ("UPDATE cardVersion SET offset = 'x' WHERE cardID = 'a'", "cardVersion", "column: \"offset\""),
    ("UPDATE cardVersion SET topic = x'ff'", "cardVersion", "column: \"topic\""),
    ("UPDATE cardVersion SET card = x'0a' WHERE cardID = 'a'", "cardVersion", "the card's bytes are no card (truncated input"),
    ("UPDATE publishRecord SET lastOffset = 1.5e300", "publishRecord", "column: \"lastOffset\""),
  ])
  func aValueOfTheWrongTypeStopsTheStart(corruption: String, table: String, message: String) async throws {
    defer { try? FileManager.default.removeItem(atPath: directory) }
    try await open().publish("t", [card("a", 1), card("b", 1)], key: "k")
    try await Self.databaseQueue(directory + "/broker.sqlite").write { try $0.execute(sql: corruption) }
    await #expect {
      try await open()
    } throws: { error in
      guard let error = error as? StoredRowError else { return false }
      return error.table == table && error.message.contains(message)
    }
  }

  /// A broker started again on in-memory storage, even the same storage in the same process,
  /// starts over: its topics come back empty, in new epochs, so a position from before means
  /// nothing and a client resuming from it gets a snapshot.
  @Test func anInMemoryBrokerComesBackWithNewEpochs() async throws {
    let storage = InMemoryBrokerStorage()
    let before = try await Broker(storage: storage).publish("t", [card("a", 1), card("b", 1)])
    let restarted = try await Broker(storage: storage)
    #expect(try restarted.cards(in: "t", for: reader).changes.isEmpty)
    let after = try await restarted.publish("t", [card("c", 1)])
    #expect(before.epoch != after.epoch && after.firstOffset == 1)
    let updates = try restarted.subscribe("t", epoch: before.epoch, offset: before.lastOffset).takeReadyFromTheWire(maxChanges: 10, nowMillis: 0)
    #expect(updates?.first?.isSnapshot == true && updates?.first?.changes.map(\.cardID) == ["c"])
  }
}
