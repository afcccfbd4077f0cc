import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `pushline serve` as a child process on a free loopback port — what the crash test kills.
final class BrokerProcess: Sendable {
  /// The `pushline` executable that `swift build` made next to the tests.
  static let executable = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent(".build/debug/pushline")

  let process: Process
  let port: Int

  /// Starts the broker on `dataDirectory` and waits for its "serving on" line.
  init(dataDirectory: String, secret: String) async throws {
    let path = Self.executable.path
    try #require(FileManager.default.isExecutableFile(atPath: path), "\(path) is missing: run `swift build` first")
    let process = Process()
    process.executableURL = Self.executable
    process.arguments = ["serve", "--port", "0", "--storage", "sqlite", "--data-dir", dataDirectory]
    process.environment = ["PUSHLINE_TOKEN_SECRET": secret]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    self.process = process
    let handle = output.fileHandleForReading
    let line = await Task.detached {
      var bytes: [UInt8] = []
      while !bytes.contains(UInt8(ascii: "\n")) {
        let chunk = handle.availableData
        if chunk.isEmpty { break }
        bytes += chunk
      }
      return String(decoding: bytes, as: UTF8.self)
    }.value
    guard let range = line.range(of: #"127\.0\.0\.1:(\d+)"#, options: .regularExpression),
      let port = Int(line[range].split(separator: ":").last ?? "")
    else {
      process.terminate()
      throw BrokerProcessError(output: line)
    }
    self.port = port
  }

  /// Kills the broker without warning, as a crash or power loss would, and waits for it to go.
  func kill() async {
    _ = Glibc.kill(process.processIdentifier, SIGKILL)
    await Task.detached { [process] in process.waitUntilExit() }.value
  }

  /// Stops the broker gracefully.
  func stop() async {
    process.interrupt()
    await Task.detached { [process] in process.waitUntilExit() }.value
  }

  struct BrokerProcessError: Error, CustomStringConvertible {
    var output: String
    var description: String { "pushline serve did not report its port; it printed: \(output)" }
  }
}
