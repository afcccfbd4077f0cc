import ArgumentParser
import Logging
import PushlineText

extension ServeSettings {
  /// How much `serve` logs, to standard error: swift-log's levels by name.
  enum LogLevel: String, CaseIterable, Sendable, ExpressibleByArgument {
    case trace, debug, info, notice, warning, error, critical

    /// The swift-log level.
    var level: Logger.Level {
      switch self {
      case .trace: .trace
      case .debug: .debug
      case .info: .info
      case .notice: .notice
      case .warning: .warning
      case .error: .error
      case .critical: .critical
      }
    }
  }
}

extension ServeSettings.LogLevel: SettingValue {
  static var expected: String { allCases.map { "\"\($0.rawValue)\"" }.joined(separator: " or ") }

  init?(json: JSONValue) {
    guard case .string(let text) = json else { return nil }
    self.init(rawValue: text)
  }
}
