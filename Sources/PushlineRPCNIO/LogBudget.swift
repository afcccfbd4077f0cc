import NIOCore
import Synchronization

/// A server's allowance of log lines about connections that broke the protocol, shared by all
/// of its connections: at most `linesPerWindow` in each `window`, the rest counted and not
/// logged.
///
/// One line per such connection is what an operator wants from a client that misbehaves now
/// and then. A port scanner, or a fleet of clients with a broken build, brings thousands a
/// second — as many as the accept rate lets in — and a line each would flood the log (and the
/// disk, and the log shipping). The first line logged after some were dropped says how many.
final class LogBudget: Sendable {
  private struct State {
    var windowStart: NIODeadline?
    var used = 0
    var suppressed = 0
  }

  private let state = Mutex(State())
  private let linesPerWindow: Int
  private let window: TimeAmount

  /// A budget of `linesPerWindow` lines in each `window`.
  init(linesPerWindow: Int = 10, window: TimeAmount = .seconds(10)) {
    self.linesPerWindow = linesPerWindow
    self.window = window
  }

  /// Takes a line at `now`: how many lines were dropped since the last one logged, or `nil`
  /// when this one is to be dropped too.
  func take(at now: NIODeadline) -> Int? {
    state.withLock { state in
      if state.windowStart.map({ now - $0 >= window }) ?? true {
        state.windowStart = now
        state.used = 0
      }
      guard state.used < linesPerWindow else {
        state.suppressed += 1
        return nil
      }
      state.used += 1
      defer { state.suppressed = 0 }
      return state.suppressed
    }
  }
}
