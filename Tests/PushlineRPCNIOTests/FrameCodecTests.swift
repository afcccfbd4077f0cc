import NIOCore
import NIOEmbedded
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
      FrameDecodingHandler(maxPayloadLength: limit, expectingPreface: expectingPreface),
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

  /// The whole stream one byte per read: every element is kept across reads until whole, and
  /// nothing is lost, invented or passed on early.
  @Test func aStreamReadAByteAtATimeReassembles() throws {
    let channel = try Self.channel()
    var received: [ConnectionElement] = []
    for byte in Self.stream.bytes {
      try channel.writeInbound(ByteBuffer(bytes: [byte]))
      while let element = try channel.readInbound(as: ConnectionElement.self) { received.append(element) }
    }
    #expect(received == Self.stream.elements)
    #expect(try channel.finish().isClean)
  }

  /// Many elements in one read, the last one cut short and finished by the next read.
  @Test func aReadOfManyFramesPassesEachOnAndKeepsTheUnfinishedOne() throws {
    let channel = try Self.channel()
    let (bytes, elements) = Self.stream
    let cut = bytes.count - 2
    try channel.writeInbound(ByteBuffer(bytes: bytes[..<cut]))
    var received: [ConnectionElement] = []
    while let element = try channel.readInbound(as: ConnectionElement.self) { received.append(element) }
    #expect(received == Array(elements.dropLast()))
    try channel.writeInbound(ByteBuffer(bytes: bytes[cut...]))
    #expect(try channel.readInbound(as: ConnectionElement.self) == elements.last)
    #expect(try channel.finish().isClean)
  }

  /// A frame of the largest payload allowed, in reads of 1,000 bytes, arrives whole.
  @Test func aLargeFrameGrowsOverManyReads() throws {
    let channel = try Self.channel(expectingPreface: false)
    let frame = Frame(kind: .message, callID: 5, payload: (0..<Self.limit).map { UInt8(truncatingIfNeeded: $0 * 7) })
    let bytes = frame.bytes
    for start in stride(from: 0, to: bytes.count, by: 1_000) {
      #expect(try channel.readInbound(as: ConnectionElement.self) == nil)
      try channel.writeInbound(ByteBuffer(bytes: bytes[start..<min(start + 1_000, bytes.count)]))
    }
    #expect(try channel.readInbound(as: ConnectionElement.self) == .frame(frame))
    #expect(try channel.finish().isClean)
  }

  /// Bytes that arrive while a read is being decoded — a handler further on reading more in
  /// reply — are decoded after the rest of that read, in order.
  @Test func bytesArrivingDuringADecodeFollowTheReadUnderWay() throws {
    let channel = EmbeddedChannel()
    let (first, second) = (Self.everyKind[1], Self.everyKind[2])
    let third = Frame(kind: .message, callID: 3, payload: [0] + Array(repeating: 0x55, count: 40))
    // The first read holds two frames and the start of a third's header; the handler after the
    // decoder feeds the rest of the third in as it receives the first frame.
    let cut = 4
    let reentrant = ReactingToTheFirst { context in
      context.pipeline.syncOperations.fireChannelRead(NIOAny(ByteBuffer(bytes: third.bytes[cut...])))
    }
    try channel.pipeline.syncOperations.addHandlers([
      FrameDecodingHandler(maxPayloadLength: Self.limit, expectingPreface: false), reentrant,
    ])
    try channel.writeInbound(ByteBuffer(bytes: first.bytes + second.bytes + third.bytes[..<cut]))
    #expect(reentrant.received == [first, second, third].map(ConnectionElement.frame))
    #expect(try channel.finish().isClean)
  }

  /// A connection closed by a handler further on, as it receives a read's first frame, is
  /// passed none of the read's other frames.
  @Test func nothingIsPassedOnOnceTheChannelIsInactive() throws {
    let channel = EmbeddedChannel()
    let closing = ReactingToTheFirst { context in context.close(promise: nil) }
    try channel.pipeline.syncOperations.addHandlers([
      FrameDecodingHandler(maxPayloadLength: Self.limit, expectingPreface: false), closing,
    ])
    try channel.writeInbound(ByteBuffer(bytes: Self.everyKind[1].bytes + Self.everyKind[2].bytes))
    #expect(!channel.isActive)
    #expect(closing.received == [.frame(Self.everyKind[1])])
  }

  /// After the first violation nothing more is decoded: not the rest of that read, not later reads.
  @Test func nothingIsDecodedAfterAViolation() throws {
    let channel = try Self.channel(expectingPreface: false)
    let good = Self.everyKind[1].bytes
    let bad = FrameHeader(payloadLength: Self.limit + 1, kind: .message, callID: 1).bytes
    #expect(throws: ProtocolViolation.self) { try channel.writeInbound(ByteBuffer(bytes: good + bad + good)) }
    #expect(try channel.readInbound(as: ConnectionElement.self) == .frame(Self.everyKind[1]))
    #expect(try channel.readInbound(as: ConnectionElement.self) == nil)
    try channel.writeInbound(ByteBuffer(bytes: good))
    #expect(try channel.readInbound(as: ConnectionElement.self) == nil)
    _ = try? channel.finish()
  }

  /// A preface and a frame of every kind, as bytes and as the elements they decode to.
  static let stream: (bytes: [UInt8], elements: [ConnectionElement]) = everyKind.reduce(
    (ConnectionPreface().bytes, [.preface(ConnectionPreface())])
  ) { stream, frame in (stream.bytes + frame.bytes, stream.elements + [.frame(frame)]) }

  @Test func aStreamSplitAtEveryBoundaryReassembles() throws {
    let (stream, expected) = Self.stream
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

/// Records the elements it receives, and does `reaction` as the first one arrives.
private final class ReactingToTheFirst: ChannelInboundHandler {
  typealias InboundIn = ConnectionElement

  private var reaction: ((ChannelHandlerContext) -> Void)?
  private(set) var received: [ConnectionElement] = []

  init(_ reaction: @escaping (ChannelHandlerContext) -> Void) { self.reaction = reaction }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    received.append(unwrapInboundIn(data))
    guard let reaction else { return }
    self.reaction = nil
    reaction(context)
  }
}
