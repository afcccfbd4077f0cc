import PushlineRPC
import Testing

@Suite("Frame header and preface")
struct FrameHeaderTests {
  @Test func headerLayoutIsBigEndianLengthKindFlagsCallID() {
    let header = FrameHeader(payloadLength: 0x01_02_03, kind: .message, callID: 0x0A0B_0C0D)
    #expect(header.bytes == [0x01, 0x02, 0x03, 0x02, 0x00, 0x0A, 0x0B, 0x0C, 0x0D])
  }

  @Test func headerRoundTripsAtTheLimits() throws {
    for header in [
      FrameHeader(payloadLength: 0, kind: .ping, callID: 0),
      FrameHeader(payloadLength: FrameHeader.maxPayloadLength, kind: FrameKind(rawValue: 0xFF), flags: 0xFF, callID: UInt32(Int32.max)),
    ] {
      let parsed = try header.bytes.withUnsafeBytes { try FrameHeader(parsing: $0) }
      #expect(parsed == header)
    }
  }

  /// Encoded frames are their frames back to back; a frame cut short, or a malformed header,
  /// ends what they are read as.
  @Test func encodedFramesAreReadAsTheFramesTheyHold() {
    let frames = [
      Frame(kind: .message, callID: 1, payload: [0, 1, 2]), Frame(kind: .status, callID: 1, payload: [8, 0]),
      Frame(kind: .halfClose, callID: 3),
    ]
    let bytes = frames.flatMap(\.bytes)
    #expect(ConnectionElement.encodedFrames(bytes).frames == frames)
    #expect(ConnectionElement.encodedFrames(Array(bytes.dropLast(3))).frames == Array(frames.prefix(2)))
    #expect(ConnectionElement.encodedFrames(frames[0].bytes + [0, 0, 0, 0x02, 0, 0x80, 0, 0, 1]).frames == [frames[0]])
    #expect(ConnectionElement.preface(ConnectionPreface()).frames.isEmpty)
    #expect(ConnectionElement.message(callID: 1, compressed: false, bytes: [1, 2]).frames == [Frame(kind: .message, callID: 1, payload: [0, 1, 2])])
  }

  @Test func theReservedCallIDBitIsAViolation() {
    let bytes: [UInt8] = [0, 0, 0, 0x02, 0, 0x80, 0, 0, 1]
    #expect(throws: ProtocolViolation.self) { try bytes.withUnsafeBytes { try FrameHeader(parsing: $0) } }
  }

  @Test func unknownKindsAreRepresentedNotRejected() throws {
    let bytes: [UInt8] = [0, 0, 0, 0x42, 0, 0, 0, 0, 0]
    let parsed = try bytes.withUnsafeBytes { try FrameHeader(parsing: $0) }
    #expect(parsed.kind.rawValue == 0x42)
    #expect(!parsed.kind.isKnown)
    #expect(parsed.kind.description == "UNKNOWN(0x42)")
  }

  @Test func prefaceIsMagicAndVersion() throws {
    #expect(ConnectionPreface().bytes == Array("PUSHLINE".utf8) + [0x00, 0x01])
    let parsed = try (Array("PUSHLINE".utf8) + [0x01, 0x02]).withUnsafeBytes { try ConnectionPreface(parsing: $0) }
    #expect(parsed.version == 0x0102)
    #expect(throws: ProtocolViolation.self) {
      try Array("HTTP/1.1 ".utf8 + [0]).withUnsafeBytes { try ConnectionPreface(parsing: $0) }
    }
  }
}
