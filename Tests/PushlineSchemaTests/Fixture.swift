import Testing
import Foundation
import PushlineText

/// Reads the annotated hex fixtures: `#` starts a comment, white space is ignored.
enum Fixture {
  static func bytes(_ name: String) throws -> [UInt8] {
    let url = try #require(Bundle.module.url(forResource: name, withExtension: "hex", subdirectory: "Fixtures"))
    let text = try String(contentsOf: url, encoding: .utf8)
    let hex = text.split(separator: "\n").map { line in line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0] }
      .joined(separator: " ")
    return try #require(Hex.decode(hex))
  }
}
