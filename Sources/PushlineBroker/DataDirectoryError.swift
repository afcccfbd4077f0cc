#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A broker's data directory, its lock file or its record of runs cannot be created, opened,
/// locked or written: what the system said, as an operator reads it (`cannot create
/// /var/lib/pushline: Permission denied`).
public struct DataDirectoryError: Error, Hashable, Sendable, CustomStringConvertible {
  /// What could not be done: `create`, `open`, `lock`, `write`, `rename`, `remove` or `sync`.
  public var action: String
  /// The directory (or the first of its parents) that could not be made, or the file.
  public var path: String
  /// The system's error number.
  public var errno: Int32

  /// For example `cannot open /var/lib/pushline/broker.lock: Permission denied`.
  public var description: String { "cannot \(action) \(path): \(String(cString: strerror(errno)))" }
}
