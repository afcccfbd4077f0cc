import Foundation
import PushlineWire

/// Where a command reads its input: a file, standard input, or text given inline.
enum InputSource {
  /// Reads `path`, or standard input when `path` is `nil` or `-`.
  static func read(path: String?) throws -> [UInt8] {
    guard let path, path != "-" else {
      return [UInt8](FileHandle.standardInput.readDataToEndOfFile())
    }
    guard let data = FileManager.default.contents(atPath: path) else {
      throw CommandFailure("cannot read \(path)")
    }
    return [UInt8](data)
  }

  /// Reads `path` as ``read(path:)`` does, as UTF-8 text.
  ///
  /// - Throws: `CommandFailure` naming the line and byte of the first sequence that is not
  ///   UTF-8: repaired instead, with U+FFFD, two different card IDs could become one.
  static func readText(path: String?) throws -> String {
    let bytes = try read(path: path)
    if let text = String(validating: bytes, as: UTF8.self) { return text }
    let offset = bytes.withUnsafeBytes { UTF8Check.invalidOffset($0) } ?? 0
    let lineStart = bytes[..<offset].lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0
    let line = bytes[..<offset].count { $0 == UInt8(ascii: "\n") } + 1
    throw CommandFailure("\(name(of: path)), line \(line): not UTF-8 at byte \(offset - lineStart + 1) of the line")
  }

  /// How messages name the input at `path`.
  static func name(of path: String?) -> String {
    path.flatMap { $0 == "-" ? nil : $0 } ?? "standard input"
  }
}
