import Foundation

/// A broker's data directory, made if missing and held by this broker alone: an exclusive
/// `flock(2)` on the directory itself, until the storage holding it goes; `broker.lock` names
/// the holder. Not a lock on that file: a file can be deleted from under its holder (someone
/// clearing "stale" locks), and a second broker would then lock a new one; a directory cannot
/// be replaced while it holds the data.
///
/// Two brokers on one directory would each number the same topics from their own memory, and
/// give the same offsets to different changes: a client resuming from one of them would then
/// skip changes it never saw. SQLite's own locks serialize their writes but cannot tell them
/// apart, so the second broker is refused at start instead, with the first one's process id.
/// The kernel releases the lock when its process dies, even by SIGKILL: a crashed broker's
/// directory opens again at once. A holder that is still stopping (a broker restarted while
/// its previous process exits, or a storage in this process not yet let go of by the tasks
/// that used it) is waited for, up to a timeout, as SQLite waits for its own locks.
final class DataDirectory: Sendable {
  private let path: String
  private let directory: Int32
  private let descriptor: Int32

  /// Makes the directory at `path` (and its parents) if missing, and takes its lock, waiting
  /// up to `timeout` for another holder to let go of it — blocking the calling thread while it
  /// waits, as SQLite's busy timeout does (a broker opens its storage once, at start).
  ///
  /// - Throws: ``DataDirectoryInUseError`` when another process (or another storage in this
  ///   one) still holds it; ``DataDirectoryError`` when the directory cannot be made, opened or
  ///   locked, or its lock file opened (it must be a regular file, not a link).
  /// - Parameter whenWaiting: called once if the lock is held by another when first tried
  ///   (tests let go of it then).
  init(path: String, waiting timeout: Duration, whenWaiting: () -> Void = {}) throws {
    try Self.make(path)
    let directory = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard directory >= 0 else { throw DataDirectoryError(action: "open", path: path, errno: errno) }
    let lockPath = (path as NSString).appendingPathComponent("broker.lock")
    // Not through a link: the file is truncated and written below.
    let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
    guard descriptor >= 0 else {
      let failure = errno
      close(directory)
      throw DataDirectoryError(action: "open", path: lockPath, errno: failure)
    }
    var status = stat()
    guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
      close(descriptor)
      close(directory)
      throw DataDirectoryError(action: "open", path: lockPath, errno: EINVAL)
    }
    let deadline = ContinuousClock.now + timeout
    var hasWaited = false
    while flock(directory, LOCK_EX | LOCK_NB) != 0 {
      let failure = errno
      if failure == EINTR { continue }
      if failure == EWOULDBLOCK, ContinuousClock.now < deadline {
        if !hasWaited { whenWaiting() }
        hasWaited = true
        usleep(10_000)
        continue
      }
      defer {
        close(descriptor)
        close(directory)
      }
      if failure == EWOULDBLOCK { throw DataDirectoryInUseError(directory: path, holder: Self.processID(in: descriptor)) }
      throw DataDirectoryError(action: "lock", path: path, errno: failure)
    }
    // Who holds it, for the error a second broker reports; the lock, not this, excludes.
    // Written before the rest is cut off, so a reader never finds the file empty.
    let pid = Array("\(getpid())\n".utf8)
    let written = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
    if written == pid.count { _ = ftruncate(descriptor, off_t(pid.count)) }
    self.path = path
    self.directory = directory
    self.descriptor = descriptor
  }

  /// The file numbering the brokers that ran on the directory.
  private static let runFile = "broker.run"

  /// What the directory records of its last broker run (``recordRun(_:)``).
  enum RecordedRun: Equatable {
    /// No record: a directory from before runs were numbered, or its record removed.
    case none
    /// The last run's number.
    case run(Int64)
    /// A record that does not read as a run's number (damaged), or one too large to count on
    /// from.
    case unreadable
  }

  /// The largest run number counted on from; past it, numbering starts again (after a renewal).
  static let maxRun = Int64.max / 2

  /// What the directory records of its last broker run.
  ///
  /// - Throws: ``DataDirectoryError`` when the record is there but cannot be read, or is not
  ///   a regular file (a link, a pipe, a directory).
  func lastRun() throws(DataDirectoryError) -> RecordedRun {
    let name = "\(path)/\(Self.runFile)"
    // Not through a link, and without waiting for a writer should it be a pipe.
    let file = openat(directory, Self.runFile, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
    guard file >= 0 else {
      switch errno {
      case ENOENT: return .none
      case ELOOP: throw DataDirectoryError(action: "read", path: name, errno: EINVAL)  // a link: not followed
      case let failure: throw DataDirectoryError(action: "open", path: name, errno: failure)
      }
    }
    defer { close(file) }
    var status = stat()
    guard fstat(file, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
      throw DataDirectoryError(action: "read", path: name, errno: EINVAL)
    }
    var bytes = [UInt8](repeating: 0, count: 32)
    let count = bytes.withUnsafeMutableBytes { read(file, $0.baseAddress, $0.count) }
    guard count >= 0 else { throw DataDirectoryError(action: "read", path: name, errno: errno) }
    let text = String(decoding: bytes[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    guard let run = Int64(text), (0...Self.maxRun).contains(run) else { return .unreadable }
    return .run(run)
  }

  /// Records `run` as the number of the last broker run on the directory: written whole to a
  /// file of its own, synced, then renamed over the old record, so that a crash leaves one or
  /// the other.
  ///
  /// - Throws: ``DataDirectoryError`` when the record cannot be written.
  func recordRun(_ run: Int64) throws(DataDirectoryError) {
    let temporary = Self.runFile + ".new"
    // Not through a link, and without waiting for a reader should it be a pipe.
    let file = openat(directory, temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o644)
    guard file >= 0 else { throw DataDirectoryError(action: "create", path: "\(path)/\(temporary)", errno: errno) }
    let text = Array("\(run)\n".utf8)
    let written = text.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
    // A short write of a few bytes to a new file: a full disk, say, as EIO.
    let failure: Int32? = written != text.count ? (written < 0 ? errno : EIO) : (fsync(file) == 0 ? nil : errno)
    close(file)
    if let failure { throw DataDirectoryError(action: "write", path: "\(path)/\(temporary)", errno: failure) }
    guard renameat(directory, temporary, directory, Self.runFile) == 0 else {
      throw DataDirectoryError(action: "rename", path: "\(path)/\(temporary)", errno: errno)
    }
    guard fsync(directory) == 0 else { throw DataDirectoryError(action: "sync", path: path, errno: errno) }
  }

  /// The file that says a start found the database's write-ahead log missing or empty and
  /// stopped before the database recorded what that means (``noteMissingLog()``).
  private static let missingLogFile = "broker.log-missing"

  /// Whether a start found the database's log missing, and stopped before the database
  /// recorded what that means.
  var hasMissingLogNote: Bool {
    var status = stat()
    return fstatat(directory, Self.missingLogFile, &status, AT_SYMLINK_NOFOLLOW) == 0
  }

  /// Notes, durably, that the database's log is missing at this start, before the database is
  /// opened: opening it writes a log of its own, which a start killed next would leave behind
  /// to read as the lost one.
  ///
  /// - Throws: ``DataDirectoryError`` when the note cannot be written.
  func noteMissingLog() throws(DataDirectoryError) {
    let file = openat(directory, Self.missingLogFile, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o644)
    guard file >= 0 else { throw DataDirectoryError(action: "create", path: "\(path)/\(Self.missingLogFile)", errno: errno) }
    close(file)
    guard fsync(directory) == 0 else { throw DataDirectoryError(action: "sync", path: path, errno: errno) }
  }

  /// Removes the note of ``noteMissingLog()``, once the database records what the missing log
  /// meant.
  ///
  /// - Throws: ``DataDirectoryError`` when it cannot be removed.
  func clearMissingLogNote() throws(DataDirectoryError) {
    guard unlinkat(directory, Self.missingLogFile, 0) == 0 || errno == ENOENT else {
      throw DataDirectoryError(action: "remove", path: "\(path)/\(Self.missingLogFile)", errno: errno)
    }
    guard fsync(directory) == 0 else { throw DataDirectoryError(action: "sync", path: path, errno: errno) }
  }

  /// Makes the directory at `path` and its missing parents, as `mkdir -p` does; the system's
  /// reason, naming the directory that could not be made, when it cannot (Foundation's
  /// `createDirectory` loses the reason). A directory that exists is taken as it is, whatever
  /// `mkdir` says of it (NFS may say EACCES before EEXIST).
  private static func make(_ path: String) throws(DataDirectoryError) {
    guard !isDirectory(path) else { return }
    var prefix = path.hasPrefix("/") ? "/" : ""
    for component in path.split(separator: "/") {
      prefix += component
      if mkdir(prefix, 0o755) != 0 {
        let failure = errno
        guard isDirectory(prefix) else {
          throw DataDirectoryError(action: "create", path: prefix, errno: failure == EEXIST ? ENOTDIR : failure)
        }
      }
      prefix += "/"
    }
  }

  /// Whether `path` names a directory (through links).
  private static func isDirectory(_ path: String) -> Bool {
    var status = stat()
    return stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR
  }

  deinit {
    close(descriptor)
    close(directory)  // Releases the lock.
  }

  /// The process id the holder wrote into the lock file, if it reads as one.
  private static func processID(in descriptor: Int32) -> Int32? {
    var bytes = [UInt8](repeating: 0, count: 16)
    let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
    guard count > 0 else { return nil }
    return String(decoding: bytes[..<count], as: UTF8.self).split(separator: "\n").first.flatMap { Int32($0) }
  }
}
