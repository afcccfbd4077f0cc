import NIOCore
import NIOEmbedded
import PushlineRPC
import Testing

@testable import PushlineRPCNIO

@Suite("Frame encoding: the small frames of a flush share one buffer")
struct FrameEncodingHandlerTests {
  static func channel() throws -> (EmbeddedChannel, PassedDown<ByteBuffer>) {
    let channel = EmbeddedChannel()
    let passedDown = PassedDown<ByteBuffer>()
    try channel.pipeline.syncOperations.addHandlers([passedDown, FrameEncodingHandler()])
    return (channel, passedDown)
  }

  static func frame(_ callID: UInt32, payloadBytes: Int) -> Frame {
    Frame(kind: .message, callID: callID, payload: Array(repeating: UInt8(truncatingIfNeeded: callID), count: payloadBytes))
  }

  /// The frames in `buffers`, decoded in order.
  static func frames(in buffers: [ByteBuffer]) throws -> [Frame] {
    var decoder = FrameDecoder(maxPayloadLength: 1 << 20, expectingPreface: false)
    var frames: [Frame] = []
    for var buffer in buffers {
      while case .frame(let frame)? = try decoder.decodeElement(from: &buffer) { frames.append(frame) }
      #expect(buffer.readableBytes == 0)
    }
    return frames
  }

  @Test func smallFramesWrittenBeforeAFlushLeaveInOneBufferInOrder() throws {
    let (channel, passedDown) = try Self.channel()
    let written = (1...5).map { Self.frame($0, payloadBytes: 40) }
    for frame in written { channel.write(ConnectionElement.frame(frame), promise: nil) }
    #expect(passedDown.take().isEmpty)  // nothing passed down before the flush
    channel.flush()
    let buffers = passedDown.take()
    #expect(buffers.count == 1)
    #expect(try Self.frames(in: buffers) == written)
    _ = try channel.finish(acceptAlreadyClosed: false)
  }

  @Test func aLargeFrameFollowsThePendingOnesInABufferOfItsOwnSize() throws {
    let (channel, passedDown) = try Self.channel()
    let small = Self.frame(1, payloadBytes: 10)
    let large = Self.frame(2, payloadBytes: FrameEncodingHandler.batchLimit)
    let after = Self.frame(3, payloadBytes: 10)
    for frame in [small, large, after] { channel.write(ConnectionElement.frame(frame), promise: nil) }
    channel.flush()
    let buffers = passedDown.take()
    #expect(buffers.map(\.readableBytes) == [FrameHeader.size + 10, FrameHeader.size + FrameEncodingHandler.batchLimit, FrameHeader.size + 10])
    #expect(buffers[1].capacity < 2 * buffers[1].readableBytes)
    #expect(try Self.frames(in: buffers) == [small, large, after])
    _ = try channel.finish(acceptAlreadyClosed: false)
  }

  @Test func pendingFramesGoDownOnceTheyReachTheBatchLimitSoWritabilitySeesThem() throws {
    let (channel, passedDown) = try Self.channel()
    let perFrame = 1_000
    let count = FrameEncodingHandler.batchLimit / (FrameHeader.size + perFrame) + 1
    let written = (1...count).map { Self.frame(UInt32($0), payloadBytes: perFrame) }
    for frame in written { channel.write(ConnectionElement.frame(frame), promise: nil) }
    let beforeFlush = passedDown.take()
    #expect(beforeFlush.count == 1)  // passed down unflushed, at the limit
    #expect(beforeFlush[0].readableBytes >= FrameEncodingHandler.batchLimit)
    #expect(try Self.frames(in: beforeFlush) == written)
    _ = try channel.finish(acceptAlreadyClosed: false)
  }

  @Test func aWriteWithAPromiseGoesDownWithTheFramesBeforeItAndCompletes() throws {
    let (channel, passedDown) = try Self.channel()
    let first = Self.frame(1, payloadBytes: 10)
    let last = Self.frame(2, payloadBytes: 10)
    channel.write(ConnectionElement.frame(first), promise: nil)
    let written = channel.eventLoop.makePromise(of: Void.self)
    channel.write(ConnectionElement.frame(last), promise: written)
    let buffers = passedDown.take()
    #expect(buffers.count == 1)
    #expect(try Self.frames(in: buffers) == [first, last])
    channel.flush()
    try written.futureResult.wait()
    _ = try channel.finish(acceptAlreadyClosed: false)
  }
}
