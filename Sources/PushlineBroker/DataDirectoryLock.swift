#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A data directory held by one broker: an exclusive `flock(2)` on its `broker.lock` file,
/// held until the lock is released (when the storage holding it goes).
///
/// Two brokers on one directory would each number the same topics from their own memory, and
/// give the same offsets to different changes: a client resuming from one of them would then
/// skip changes it never saw. SQLite's own locks serialize their writes but cannot tell them
/// apart, so the second broker is refused at start instead, with the first one's process id.
/// The kernel releases the lock when its process dies, even by SIGKILL: a crashed broker's
/// directory opens again at once.
final class DataDirectoryLock: Sendable {
  private let descriptor: Int32

  /// The lock file's name in the data directory.
  static let fileName = "broker.lock"

  /// Takes the lock of `directory`, which must exist.
  ///
  /// - Throws: ``DataDirectoryInUseError`` when another process (or another storage in this
  ///   one) holds it; ``DataDirectoryLockError`` when the lock file cannot be opened or locked.
  init(directory: String) throws {
    let path = directory.hasSuffix("/") ? directory + Self.fileName : directory + "/" + Self.fileName
    let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
    guard descriptor >= 0 else { throw DataDirectoryLockError(path: path, errno: errno) }
    guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
      let failure = errno
      defer { close(descriptor) }
      guard failure == EWOULDBLOCK else { throw DataDirectoryLockError(path: path, errno: failure) }
      throw DataDirectoryInUseError(directory: directory, holder: Self.processID(in: descriptor))
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
