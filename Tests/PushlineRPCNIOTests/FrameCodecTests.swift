import NIOCore
import NIOEmbedded
import NIOTestUtils
import PushlineRPC
import PushlineRPCNIO
import Testing

@Suite("Frame codec on EmbeddedChannel")
struct FrameCodecTests {
  static let limit = 1 << 16

  static let everyKind: [Frame] = [
    Frame(kind: .handshake, callID: 0, payload: [0x08, 0x01, 0x10, 0x01]),
    Frame(kind: .callStart, callID: 1, payload: Array("\n\u{1A}/pushline.Health/Check".utf8)),
    Frame(kind: .message, callID: 1, payload: [0x00] + Array(repeating: 0xAB, count: 300)),
    Frame(kind: .halfClose, callID: 1),
    Frame(kind: .status, callID: 1, payload: [0x08, 0x00]),
    Frame(kind: .cancel, callID: 3),
    Frame(kind: .ping, callID: 0, payload: [1, 2, 3, 4, 5, 6, 7, 8]),
    Frame(kind: .pong, callID: 0, payload: [1, 2, 3, 4, 5, 6, 7, 8]),
    Frame(kind: .goAway, callID: 0, payload: [0x08, 0x05]),
    Frame(kind: FrameKind(rawValue: 0x7F), flags: 0x01, callID: 9, payload: [0xEE]),
  ]

  static func channel(expectingPreface: Bool = true) throws -> EmbeddedChannel {
    let channel = EmbeddedChannel()
    try channel.pipeline.syncOperations.addHandlers([
      ByteToMessageHandler(FrameDecoder(maxPayloadLength: limit, expectingPreface: expectingPreface)),
      MessageToByteHandler(FrameEncoder()),
    ])
    return channel
  }

  @Test func everyFrameKindRoundTrips() throws {
    let channel = try Self.channel()
    let elements = [ConnectionElement.preface(ConnectionPreface())] + Self.everyKind.map(ConnectionElement.frame)
    for element in elements { try channel.writeOutbound(element) }
    while let bytes = try channel.readOutbound(as: ByteBuffer.self) { try channel.writeInbound(bytes) }
    for element in elements { #expect(try channel.readInbound(as: ConnectionElement.self) == element) }
    #expect(try channel.readInbound(as: ConnectionElement.self) == nil)
    #expect(try channel.finish().isClean)
  }

  /// A message written as its parts goes out as the bytes of its frame, and comes back as it.
  @Test func aMessageWrittenAsItsPartsIsItsFrameOnTheWire() throws {
    let channel = try Self.channel(expectingPreface: false)
    let message = ConnectionElement.message(callID: 7, compressed: true, bytes: Array(repeating: 0xCD, count: 300))
    try channel.writeOutbound(message)
    let bytes = try #require(try channel.readOutbound(as: ByteBuffer.self))
    let frame = try #require(message.frame)
    #expect(Array(bytes.readableBytesView) == frame.bytes)
    #expect(frame.payload.first == 1 && frame.payload.count == 301 && frame.kind == .message && frame.flags == 0)
    try channel.writeInbound(bytes)
    #expect(try channel.readInbound(as: ConnectionElement.self) == .frame(frame))
    #expect(try channel.finish().isClean)
  }

  /// NIO's verifier feeds the bytes whole, byte by byte, and in other splits, and checks the
  /// decoder neither loses nor invents anything and leaves nothing behind. (It replays inputs
  /// on one decoder, so frames only; the preface is split at every boundary below.)
  @Test func framesSplitAtEveryByteBoundaryReassemble() throws {
    try ByteToMessageDecoderVerifier.verifyDecoder(
      inputOutputPairs: Self.everyKind.map { (ByteBuffer(bytes: $0.bytes), [ConnectionElement.frame($0)]) },
      decoderFactory: { FrameDecoder(maxPayloadLength: Self.limit, expectingPreface: false) }
    )
  }

  @Test func aStreamSplitAtEveryBoundaryReassembles() throws {
    var stream = ConnectionPreface().bytes
    var expected: [ConnectionElement] = [.preface(ConnectionPreface())]
    for frame in Self.everyKind {
      stream += frame.bytes
      expected.append(.frame(frame))
    }
    for split in 1..<stream.count {
      let channel = try Self.channel()
      try channel.writeInbound(ByteBuffer(bytes: stream[..<split]))
      try channel.writeInbound(ByteBuffer(bytes: stream[split...]))
      var received: [ConnectionElement] = []
      while let element = try channel.readInbound(as: ConnectionElement.self) { received.append(element) }
      #expect(received == expected, "split at \(split)")
    }
  }

  @Test func anOversizedFrameIsRejectedAsSoonAsItsHeaderArrives() throws {
    let channel = try Self.channel(expectingPreface: false)
    let header = FrameHeader(payloadLength: Self.limit + 1, kind: .message, callID: 1)
    #expect {
      try channel.writeInbound(ByteBuffer(bytes: header.bytes))
    } throws: { error in
      (error as? ProtocolViolation)?.code == .frameTooLarge
    }
  }

  @Test func theLargestLengthA24BitHeaderCanCarryIsRejectedWithoutBuffering() throws {
    let channel = try Self.channel(expectingPreface: false)
    let header = FrameHeader(payloadLength: FrameHeader.maxPayloadLength, kind: .message, callID: 1)
    #expect(throws: ProtocolViolation.self) { try channel.writeInbound(ByteBuffer(bytes: header.bytes + [0, 1, 2])) }
  }

  @Test func garbageIsRejectedAtItsFirstByte() throws {
    let channel = try Self.channel()
    #expect {
      try channel.writeInbound(ByteBuffer(bytes: [0x47]))  // "G", as in "GET / HTTP/1.1"
    } throws: { error in
      (error as? ProtocolViolation)?.code == .badPreface
    }
  }

  @Test func aPartialPrefaceWaitsForMore() throws {
    let channel = try Self.channel()
    try channel.writeInbound(ByteBuffer(bytes: Array("PUSH".utf8)))
    #expect(try channel.readInbound(as: ConnectionElement.self) == nil)
    try channel.writeInbound(ByteBuffer(bytes: Array("LINE".utf8) + [0, 1]))
    #expect(try channel.readInbound(as: ConnectionElement.self) == .preface(ConnectionPreface(version: 1)))
  }

  @Test func aReservedCallIDBitIsAViolation() throws {
    let channel = try Self.channel(expectingPreface: false)
    #expect {
      try channel.writeInbound(ByteBuffer(bytes: [0, 0, 0, 0x02, 0, 0x80, 0, 0, 1]))
    } throws: { error in
      (error as? ProtocolViolation)?.code == .reservedBitSet
    }
  }

  @Test func aTruncatedFrameAtTheEndOfTheConnectionIsDropped() throws {
    let channel = try Self.channel(expectingPreface: false)
    let frame = Frame(kind: .message, callID: 1, payload: [0, 1, 2, 3])
    try channel.writeInbound(ByteBuffer(bytes: Array(frame.bytes.dropLast())))
    #expect(try channel.readInbound(as: ConnectionElement.self) == nil)
    _ = try? channel.finish()
  }
}
