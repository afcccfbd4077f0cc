import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// The controlling terminal: whether output goes to one, and its key presses.
enum Terminal {
  /// Whether standard output is a terminal (otherwise `watch` and `demo` log plain lines).
  static var isInteractive: Bool { isatty(STDOUT_FILENO) == 1 && isatty(STDIN_FILENO) == 1 }

  /// Key presses, one byte each, with the terminal in raw mode (no echo, no line editing)
  /// until the stream ends; the terminal's mode is restored then.
  static func keys() -> AsyncStream<UInt8> {
    var original = termios()
    tcgetattr(STDIN_FILENO, &original)
    var raw = original
    raw.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG)
    tcsetattr(STDIN_FILENO, TCSANOW, &raw)
    let saved = original
    let (stream, continuation) = AsyncStream<UInt8>.makeStream()
    let thread = Thread {
      var byte: UInt8 = 0
      while read(STDIN_FILENO, &byte, 1) == 1 { continuation.yield(byte) }
      continuation.finish()
    }
    thread.start()
    continuation.onTermination = { _ in
      var restore = saved
      tcsetattr(STDIN_FILENO, TCSANOW, &restore)
    }
    return stream
  }
}
