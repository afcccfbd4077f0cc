import Foundation
import Synchronization

/// The broker benchmark's child processes (this executable re-executed): started with a
/// timeout on everything read from them, registered so that an interrupted benchmark kills
/// them, and killed when done. (Each child also exits when it sees its parent gone.)
final class ChildProcess {
  let process: Process
  let input: Pipe
  let output: Pipe

  /// Process ids still running, for the signal handler.
  static let live = Mutex<Set<Int32>>([])

  /// Starts `arguments` on this executable with `environment` added to ours, under `prefix`
  /// if given (a profiler's command line, e.g. `valgrind --tool=callgrind`).
  static func start(_ arguments: [String], environment: [String: String] = [:], prefix: [String] = []) throws -> ChildProcess {
    let process = Process()
    let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    if prefix.isEmpty {
      process.executableURL = executable
      process.arguments = arguments
    } else {
      process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
      process.arguments = prefix + [executable.path] + arguments
    }
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let input = Pipe(), output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    let pid = process.processIdentifier
    live.withLock { _ = $0.insert(pid) }
    return ChildProcess(process: process, input: input, output: output)
  }

  private init(process: Process, input: Pipe, output: Pipe) {
    self.process = process
    self.input = input
    self.output = output
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

  /// Registers a grandchild (nats-server, started by a `broker-server` child) so that it is
  /// killed with this child.
  func adopt(_ pid: Int32) {
    guard pid != process.processIdentifier else { return }
    ChildProcess.live.withLock { _ = $0.insert(pid) }
    adopted.withLock { $0 = pid }
  }

  private let adopted = Mutex<Int32?>(nil)

  /// Closes its input: the child's signal to report what it has to and exit.
  func closeInput() {
    try? input.fileHandleForWriting.close()
  }

  /// Closes its input (a child's signal to clean up and exit), gives it two seconds, then
  /// kills it and any grandchild it reported; waits until it is gone.
  func stop() {
    closeInput()
    let deadline = Date().addingTimeInterval(2)
    while process.isRunning, Date() < deadline { usleep(10_000) }
    if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
    if let grandchild = adopted.withLock({ $0 }) {
      kill(grandchild, SIGKILL)
      _ = ChildProcess.live.withLock { $0.remove(grandchild) }
    }
    _ = ChildProcess.live.withLock { $0.remove(process.processIdentifier) }
  }
}
