import Foundation
import PushlineRPC
import PushlineSchema
import PushlineWire
import Testing

/// The example bytes in docs/PROTOCOL.md section 2.4, so that the document cannot drift from
/// the implementation.
@Suite("docs/PROTOCOL.md examples")
struct ProtocolDocumentTests {
  @Test func pingAndPong() {
    let ping = Frame(kind: .ping, callID: 0, payload: [1, 2, 3, 4, 5, 6, 7, 8])
    #expect(ping.bytes == [0x00, 0x00, 0x08, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 1, 2, 3, 4, 5, 6, 7, 8])
    let pong = Frame(kind: .pong, callID: 0, payload: ping.payload)
    #expect(pong.bytes == [0x00, 0x00, 0x08, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 1, 2, 3, 4, 5, 6, 7, 8])
  }

  /// Section 2.3's message split across two frames of at most four bytes.
  @Test func aMessageSplitAcrossFrames() {
    let frames = MessageFraming.frames(for: [0x0A, 0x04, 0x61, 0x62, 0x63, 0x64], compressed: false, callID: 1, maxFrameSize: 4)
    #expect(frames.map(\.bytes) == [
      [0x00, 0x00, 0x04, 0x02, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x0A, 0x04, 0x61],
      [0x00, 0x00, 0x03, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x62, 0x63, 0x64],
    ])
  }

  @Test func callStartForHealthCheck() {
    let frame = Frame(kind: .callStart, callID: 1, payload: CallStart(method: "/pushline.Health/Check").serializedBytes())
    #expect(frame.bytes == [0x00, 0x00, 0x18, 0x01, 0x00, 0x00, 0x00, 0x00, 0x01, 0x0A, 0x16] + Array("/pushline.Health/Check".utf8))
  }
}

extension ProtocolDocumentTests {
  /// Section 2.8's transcript, read from the document, is byte for byte what the state
  /// machines exchange.
  @Test func theCompleteConversationMatchesTheDocument() throws {
    let document = try String(contentsOfFile: #filePath.replacingOccurrences(
      of: "Tests/PushlineRPCTests/ProtocolDocumentTests.swift", with: "docs/PROTOCOL.md"), encoding: .utf8)
    let start = try #require(document.range(of: "<!-- transcript -->"))
    let end = try #require(document.range(of: "<!-- /transcript -->"))
    var documented: [(fromClient: Bool, bytes: [UInt8])] = []
    for line in document[start.upperBound..<end.lowerBound].split(separator: "\n") {
      let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
      let words = content.split(separator: " ")
      guard let first = words.first, first != "```" else { continue }
      let isStart = first == "C→S" || first == "S→C"
      let bytes = try (isStart ? words.dropFirst() : words[...]).map { word in
        try #require(UInt8(word, radix: 16), "not a hex byte in the transcript: \(word)")
      }
      if isStart {
        documented.append((first == "C→S", bytes))
      } else {
        try #require(!documented.isEmpty)
        documented[documented.count - 1].bytes += bytes
      }
    }
    let actual = Transcript.conversation()
    #expect(documented.count == actual.count)
    for (index, (expected, got)) in zip(documented, actual).enumerated() {
      #expect(expected.fromClient == got.fromClient && expected.bytes == got.bytes, "element \(index)")
    }
  }
}
