public import Logging
import Synchronization

/// A log handler that keeps what is logged through it, for tests of what a component logs.
public struct RecordingLogHandler: LogHandler {
  /// The entries logged, shared by the handler's copies.
  public final class Records: Sendable {
    private let entries = Mutex<[(level: Logger.Level, message: String, metadata: Logger.Metadata)]>([])

    /// Records nothing yet.
    public init() {}

    /// Every entry, oldest first.
    public var all: [(level: Logger.Level, message: String, metadata: Logger.Metadata)] { entries.withLock { $0 } }

    /// Adds an entry.
    public func append(_ level: Logger.Level, _ message: String, _ metadata: Logger.Metadata) {
      entries.withLock { $0.append((level, message, metadata)) }
    }
  }

  let records: Records
  public var metadata: Logger.Metadata = [:]
  public var logLevel = Logger.Level.trace

  /// A logger whose entries go to `records`.
  public static func logger(into records: Records) -> Logger {
    Logger(label: "test") { _ in RecordingLogHandler(records: records) }
  }

  public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
    get { metadata[key] }
    set { metadata[key] = newValue }
  }

  public func log(event: LogEvent) {
    records.append(event.level, event.message.description, metadata.merging(event.metadata ?? [:]) { $1 })
  }
}
