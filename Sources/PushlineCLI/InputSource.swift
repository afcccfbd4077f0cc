import Foundation

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
}
