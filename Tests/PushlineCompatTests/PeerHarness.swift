import Dispatch
import Foundation
import Testing

/// Drives the protobuf-c harness and the Python checker in `tools/compat/`: builds them once
/// per test run, and exchanges record files with them (files, not pipes, so that a large
/// corpus cannot deadlock on full pipe buffers).
enum PeerHarness {
  /// The repository root, found from this file's path.
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

  /// Where `tools/compat/build.sh` puts the harness, the generated C and the descriptor set.
  static let buildDirectory = root.appendingPathComponent(".build/compat")

  /// Builds the peers (idempotent and quick); a failure says which apt package is missing.
  static let built: Result<Void, HarnessError> = {
    do {
      let result = try run(URL(fileURLWithPath: "/bin/bash"), [root.appendingPathComponent("tools/compat/build.sh").path, buildDirectory.path])
      guard result.status == 0 else { return .failure(HarnessError(message: "tools/compat/build.sh failed:\n\(result.errorText)")) }
      return .success(())
    } catch {
      return .failure(HarnessError(message: "\(error)"))
    }
  }()

  struct HarnessError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
  }

  struct Output {
    var status: Int32
    var stdout: Data
    var errorText: String
  }

  /// Runs the protobuf-c harness with `arguments`, feeding it `input`.
  static func protobufC(_ arguments: [String], input: Data = Data()) async throws -> Data {
    let output = try await offThePool {
      try built.get()
      return try run(buildDirectory.appendingPathComponent("pbc-harness"), arguments, input: input)
    }
    guard output.status == 0 else { throw HarnessError(message: "pbc-harness \(arguments) exited \(output.status): \(output.errorText)") }
    return output.stdout
  }

  /// Runs `tools/compat/pycheck.py` on a corpus; returns its report and whether it passed.
  static func pythonCheck(corpus: Data) async throws -> (passed: Bool, report: String) {
    try await offThePool { try built.get() }
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-pycheck-\(UUID().uuidString)")
    try corpus.write(to: file)
    defer { try? FileManager.default.removeItem(at: file) }
    let output = try await offThePool {
      try run(
        URL(fileURLWithPath: "/usr/bin/env"),
        ["python3", root.appendingPathComponent("tools/compat/pycheck.py").path,
         buildDirectory.appendingPathComponent("descriptors.pb").path, file.path])
    }
    return (output.status == 0, String(decoding: output.stdout, as: UTF8.self) + output.errorText)
  }

  /// Runs `body`, which blocks (it waits for a child process), on a Dispatch thread: blocked
  /// there, it cannot starve Swift's cooperative pool, on which every other test and the
  /// brokers they run in process depend.
  static func offThePool<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
    try await withCheckedThrowingContinuation { continuation in
      DispatchQueue.global().async { continuation.resume(with: Swift.Result { try body() }) }
    }
  }

  static func run(_ executable: URL, _ arguments: [String], input: Data = Data()) throws -> Output {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-compat-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let inputFile = directory.appendingPathComponent("in"), outputFile = directory.appendingPathComponent("out")
    let errorFile = directory.appendingPathComponent("err")
    try input.write(to: inputFile)
    try Data().write(to: outputFile)
    try Data().write(to: errorFile)
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    process.standardInput = try FileHandle(forReadingFrom: inputFile)
    process.standardOutput = try FileHandle(forWritingTo: outputFile)
    process.standardError = try FileHandle(forWritingTo: errorFile)
    try process.run()
    process.waitUntilExit()
    return Output(
      status: process.terminationStatus, stdout: try Data(contentsOf: outputFile),
      errorText: String(decoding: try Data(contentsOf: errorFile), as: UTF8.self))
  }
}
