import Foundation
import Testing

@testable import PushlineCLI

/// Commands that read JSON refuse input that is not UTF-8, naming where: repaired with U+FFFD
/// instead, `id-\xFF\xFE` and `id-\xFE\xFF` would both publish as one card, the second
/// overwriting the first.
@Suite("Reading text input")
struct InputSourceTests {
  @Test func textThatIsNotUTF8IsRefusedAtItsLineAndByte() throws {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-input-\(UUID().uuidString).jsonl").path
    defer { try? FileManager.default.removeItem(atPath: path) }
    let bytes = Array(#"{"cardID":"a"}"#.utf8) + [0x0A] + Array(#"{"cardID":"id-"#.utf8) + [0xFF, 0xFE] + Array(#""}"#.utf8)
    #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
    let error = #expect(throws: CommandFailure.self) { try InputSource.readText(path: path) }
    #expect(error?.description == "\(path), line 2: not UTF-8 at byte 15 of the line")
  }

  @Test func utf8TextIsReadAsItIs() throws {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-input-\(UUID().uuidString).jsonl").path
    defer { try? FileManager.default.removeItem(atPath: path) }
    #expect(FileManager.default.createFile(atPath: path, contents: Data(#"{"cardID":"é"}"#.utf8)))
    #expect(try InputSource.readText(path: path) == #"{"cardID":"é"}"#)
  }
}
