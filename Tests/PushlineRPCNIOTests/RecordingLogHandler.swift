import Logging
import Synchronization

/// A log handler that keeps what is logged through it, for tests of what a component logs.
struct RecordingLogHandler: LogHandler {
  /// The entries logged, shared by the handler's copies.
  final class Records: Sendable {
    private let entries = Mutex<[(level: Logger.Level, message: String, metadata: Logger.Metadata)]>([])

    var all: [(level: Logger.Level, message: String, metadata: Logger.Metadata)] { entries.withLock { $0 } }

    func append(_ level: Logger.Level, _ message: String, _ metadata: Logger.Metadata) {
      entries.withLock { $0.append((level, message, metadata)) }
    }
  }

  let records: Records
  var metadata: Logger.Metadata = [:]
  var logLevel = Logger.Level.trace

  /// A logger whose entries go to `records`.
  static func logger(into records: Records) -> Logger {
    Logger(label: "test") { _ in RecordingLogHandler(records: records) }
  }

  subscript(metadataKey key: String) -> Logger.Metadata.Value? {
    get { metadata[key] }
    set { metadata[key] = newValue }
  }

  func log(event: LogEvent) {
    records.append(event.level, event.message.description, metadata.merging(event.metadata ?? [:]) { $1 })
  }
}
