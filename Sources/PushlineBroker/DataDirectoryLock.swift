#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A data directory held by one broker: an exclusive `flock(2)` on its lock file, held until
/// the lock is released (when the storage holding it goes).
///
/// Two brokers on one directory would each number the same topics from their own memory, and
/// give the same offsets to different changes: a client resuming from one of them would then
/// skip changes it never saw. SQLite's own locks serialize their writes but cannot tell them
/// apart, so the second broker is refused at start instead, with the first one's process id.
/// The kernel releases the lock when its process dies, even by SIGKILL: a crashed broker's
/// directory opens again at once. A holder that is still stopping (a broker restarted while
/// its previous process exits, or a storage in this process not yet let go of by the tasks
/// that used it) is waited for, up to a timeout, as SQLite waits for its own locks.
final class DataDirectoryLock: Sendable {
  private let descriptor: Int32

  /// Takes the lock on the file at `path` in `directory` (created if missing), waiting up to
  /// `timeout` for another holder to let go of it.
  ///
  /// - Throws: ``DataDirectoryInUseError`` when another process (or another storage in this
  ///   one) still holds it; ``DataDirectoryLockError`` when the lock file cannot be opened or
  ///   locked.
  init(path: String, of directory: String, waiting timeout: Duration) throws {
    let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
    guard descriptor >= 0 else { throw DataDirectoryLockError(path: path, errno: errno) }
    let deadline = ContinuousClock.now + timeout
    while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
      let failure = errno
      if failure == EINTR { continue }
      if failure == EWOULDBLOCK, ContinuousClock.now < deadline {
        usleep(10_000)
        continue
      }
      defer { close(descriptor) }
      if failure == EWOULDBLOCK { throw DataDirectoryInUseError(directory: directory, holder: Self.processID(in: descriptor)) }
      throw DataDirectoryLockError(path: path, errno: failure)
    }
    // Who holds it, for the error a second broker reports; the lock, not this, excludes.
    let pid = Array("\(getpid())\n".utf8)
    if ftruncate(descriptor, 0) == 0 { _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) } }
    self.descriptor = descriptor
  }

  deinit {
    close(descriptor)  // Releases the lock.
  }

  /// The process id the holder wrote into the lock file, if it reads as one.
  private static func processID(in descriptor: Int32) -> Int32? {
    var bytes = [UInt8](repeating: 0, count: 16)
    let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
    guard count > 0 else { return nil }
    return String(decoding: bytes[..<count], as: UTF8.self).split(separator: "\n").first.flatMap { Int32($0) }
  }
}
