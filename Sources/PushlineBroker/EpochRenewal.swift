/// Why opening a broker's SQLite storage gave every topic a new epoch: publishes it had
/// acknowledged may be lost, so the offsets clients hold would be given out again, to other
/// changes. Positions in the old epochs are answered with snapshots instead.
public enum EpochRenewal: Sendable, Hashable {
  /// The database of a broker that did not close it (it crashed, or was killed) was found
  /// without its write-ahead log — deleted, restored from a copy without it, or folded in by
  /// another SQLite client — so the commits since its last checkpoint may be gone.
  case writeAheadLogLost
  /// The database is older than the data directory's last broker run: a backup restored over
  /// it, or a log lost before the run's first checkpoint.
  case databaseOlderThanLastRun
  /// The data directory has no record of its last run (`broker.run`) although the database
  /// counts runs: the record was removed, or the database copied into another directory, so
  /// whether it is older cannot be told.
  case runRecordMissing
  /// The data directory's record of its last run does not read as one (damaged), or the
  /// runs' numbering is exhausted: whether the database is older cannot be told.
  case runRecordUnreadable
  /// A start that was renewing the epochs was stopped before it finished (for any reason).
  case renewalCutShort
}
