import Foundation
import Synchronization

/// The broker benchmark's child processes (this executable re-executed): started with a
/// timeout on everything read from them, registered so that an interrupted benchmark kills
/// them, and killed when done. (Each child also exits when it sees its parent gone.)
struct ChildProcess {
  let process: Process
  let input: Pipe
  let output: Pipe

  /// Process ids still running, for the signal handler.
  static let live = Mutex<Set<Int32>>([])

  /// Starts `arguments` on this executable with `environment` added to ours.
  static func start(_ arguments: [String], environment: [String: String] = [:]) throws -> ChildProcess {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let input = Pipe(), output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    let pid = process.processIdentifier
    live.withLock { _ = $0.insert(pid) }
    return ChildProcess(process: process, input: input, output: output)
  }

  /// Kills every live child: for SIGINT and SIGTERM.
  static func installSignalHandlers() {
    for number in [SIGINT, SIGTERM, SIGHUP] {
      signal(number) { _ in
        for pid in ChildProcess.live.withLock({ $0 }) { kill(pid, SIGKILL) }
        _exit(130)
      }
    }
  }

  /// Reads standard output until a line starting with `prefix`, or fails after `timeout` s
  /// (killing the child) or when the child exits first.
  func line(startingWith prefix: String, timeout: Double) throws -> String {
    let found = Mutex<String?>(nil)
    let semaphore = DispatchSemaphore(value: 0)
    let handle = output.fileHandleForReading
    Thread.detachNewThread {
      var text = ""
      while true {
        let chunk = handle.availableData
        if chunk.isEmpty { break }
        text += String(decoding: chunk, as: UTF8.self)
        let complete = text[..<(text.lastIndex(of: "\n") ?? text.startIndex)]
        if let line = complete.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) {
          found.withLock { $0 = String(line) }
          break
        }
      }
      semaphore.signal()
    }
    if semaphore.wait(timeout: .now() + timeout) == .timedOut {
      stop()
      throw LoadError("\(process.arguments?.first ?? "child") printed no \(prefix) line within \(Int(timeout)) s (killed)")
    }
    guard let line = found.withLock({ $0 }) else {
      stop()
      throw LoadError("\(process.arguments?.first ?? "child") exited without printing \(prefix) (see its error above)")
    }
    return line
  }

  /// Closes its input and kills it; waits until it is gone.
  func stop() {
    try? input.fileHandleForWriting.close()
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
    _ = ChildProcess.live.withLock { $0.remove(process.processIdentifier) }
  }
}
