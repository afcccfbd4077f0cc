#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The lock file of a data directory cannot be opened or locked.
public struct DataDirectoryLockError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The lock file.
  public var path: String
  /// The system's error number.
  public var errno: Int32

  /// For example `cannot lock /var/lib/pushline/broker.lock: Permission denied`.
  public var description: String { "cannot lock \(path): \(String(cString: strerror(errno)))" }
}
