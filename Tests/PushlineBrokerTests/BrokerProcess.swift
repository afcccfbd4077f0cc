import Dispatch
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
  /// Yields once, when the process has exited (waited for without holding a thread of
  /// Swift's cooperative pool, which the other tests' brokers need).
  private let exits: AsyncStream<Void>

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
    let (exits, exited) = AsyncStream<Void>.makeStream()
    process.terminationHandler = { _ in exited.finish() }
    try process.run()
    self.process = process
    self.exits = exits
    let handle = output.fileHandleForReading
    // The blocking reads on a Dispatch thread, not the cooperative pool.
    let line = await withCheckedContinuation { continuation in
      DispatchQueue.global().async {
        var bytes: [UInt8] = []
        while !bytes.contains(UInt8(ascii: "\n")) {
          let chunk = handle.availableData
          if chunk.isEmpty { break }
          bytes += chunk
        }
        continuation.resume(returning: String(decoding: bytes, as: UTF8.self))
      }
    }
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
    for await _ in exits {}
  }

  /// Stops the broker gracefully.
  func stop() async {
    process.interrupt()
    for await _ in exits {}
  }

  struct BrokerProcessError: Error, CustomStringConvertible {
    var output: String
    var description: String { "pushline serve did not report its port; it printed: \(output)" }
  }
}
