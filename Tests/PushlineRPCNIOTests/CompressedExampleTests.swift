import Foundation
import PushlineRPC
import PushlineSchema
import PushlineWire
import Testing

@testable import PushlineRPCNIO

/// docs/PROTOCOL.md section 2.9: the documented compressed frame inflates to the documented
/// message. (Compared after inflating, because another zlib version may deflate differently.)
@Suite("docs/PROTOCOL.md compressed example")
struct CompressedExampleTests {
  @Test func theDocumentedFrameInflatesToTheDocumentedMessage() throws {
    let document = try String(contentsOfFile: #filePath.replacingOccurrences(
      of: "Tests/PushlineRPCNIOTests/CompressedExampleTests.swift", with: "docs/PROTOCOL.md"), encoding: .utf8)
    let start = try #require(document.range(of: "<!-- compressed -->"))
    let end = try #require(document.range(of: "<!-- /compressed -->"))
    var bytes: [UInt8] = []
    for line in document[start.upperBound..<end.lowerBound].split(separator: "\n") {
      let words = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0].split(separator: " ")
      for word in words where word != "```" && word != "S→C" {
        bytes.append(try #require(UInt8(word, radix: 16), "not a hex byte: \(word)"))
      }
    }
    let header = try bytes.withUnsafeBytes { try FrameHeader(parsing: $0) }
    #expect(header.kind == .message && header.callID == 3 && header.payloadLength == bytes.count - FrameHeader.size)
    #expect(bytes[FrameHeader.size] == 1)
    let inflated = try Deflate.decompress(Array(bytes[(FrameHeader.size + 1)...]), limit: 4 << 20)
    var expected = MetadataEntry(key: "big")
    expected.value = String(repeating: "a", count: 2_000)
    #expect(inflated == expected.serializedBytes())
  }
}
