/// A broker's data directory is held by another broker (or another storage in this process):
/// a second broker on it would give the same offsets to different changes.
public struct DataDirectoryInUseError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The data directory.
  public var directory: String
  /// The process holding it, as it wrote into the lock file; nil if unknown.
  public var holder: Int32?

  /// For example `the data directory /var/lib/pushline is in use by another broker (process 4242)`.
  public var description: String {
    "the data directory \(directory) is in use by another broker\(holder.map { " (process \($0))" } ?? ""): "
      + "two brokers on one directory would give the same offsets to different changes"
  }
}
