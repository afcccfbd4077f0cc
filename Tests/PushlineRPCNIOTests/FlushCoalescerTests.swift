import NIOCore
import NIOEmbedded
import PushlineRPC
import Testing

@testable import PushlineRPCNIO

@Suite("Flush coalescing: a burst's frames go down the pipeline gathered, once per flush")
struct FlushCoalescerTests {
  /// The handler whose context the coalescer writes through, as a connection handler's does.
  final class Writer: ChannelOutboundHandler {
    typealias OutboundIn = ConnectionElement
  }

  /// A coalescer on an embedded channel, and what it passes down.
  static func coalescer() throws -> (EmbeddedChannel, FlushCoalescer, PassedDown<ConnectionElement>) {
    let channel = EmbeddedChannel()
    let passedDown = PassedDown<ConnectionElement>()
    try channel.pipeline.syncOperations.addHandlers([passedDown, Writer()])
    let context = try channel.pipeline.syncOperations.context(handlerType: Writer.self)
    return (channel, FlushCoalescer(context: context), passedDown)
  }

  static func message(_ callID: UInt32, bytes: Int) -> ConnectionElement {
    .message(callID: callID, compressed: false, bytes: Array(repeating: UInt8(truncatingIfNeeded: callID), count: bytes))
  }

  @Test func aBurstsFramesGoDownAsOneElementInOrderAtItsEnd() throws {
    let (channel, output, passedDown) = try Self.coalescer()
    let written: [ConnectionElement] = [
      Self.message(1, bytes: 30), .frame(Frame(kind: .status, callID: 1, payload: [8, 0])), Self.message(3, bytes: 0),
      .encodedFrames(Frame(kind: .halfClose, callID: 5).bytes),
    ]
    output.burst {
      for element in written { output.write(element) }
      #expect(passedDown.take().isEmpty)  // nothing before the burst ends
    }
    let elements = passedDown.take()
    #expect(elements.count == 1)
    guard case .encodedFrames? = elements.first else {
      Issue.record("expected encoded frames, got \(elements)")
      return
    }
    #expect(elements.flatMap(\.frames) == written.flatMap(\.frames))
    _ = try channel.finish(acceptAlreadyClosed: false)
  }

  @Test func aPrefaceAndAWriteWithAPromiseFollowTheFramesGatheredBeforeThem() throws {
    let (channel, output, passedDown) = try Self.coalescer()
    let written = channel.eventLoop.makePromise(of: Void.self)
    output.burst {
      output.write(Self.message(1, bytes: 10))
      output.write(.preface(ConnectionPreface()))
      output.write(Self.message(3, bytes: 10))
      output.write(Self.message(5, bytes: 10), promise: written)
    }
    let elements = passedDown.take()
    #expect(elements.count == 4)
    #expect(elements[1] == .preface(ConnectionPreface()))
    #expect(elements[3] == Self.message(5, bytes: 10))
    #expect(elements.flatMap(\.frames).map(\.callID) == [1, 3, 5])
    #expect(throws: Never.self) { try written.futureResult.wait() }
    _ = try channel.finish(acceptAlreadyClosed: false)
  }

  /// The channel's writability counts only the bytes passed down: a burst longer than the
  /// batch limit hands them on as it goes.
  @Test func gatheredFramesGoDownOnceTheyReachTheBatchLimit() throws {
    let (channel, output, passedDown) = try Self.coalescer()
    let perMessage = 1000
    let count = FrameEncodingHandler.batchLimit / perMessage + 1
    var seenBeforeTheEnd: [ConnectionElement] = []
    output.burst {
      for callID in 1...count { output.write(Self.message(UInt32(callID), bytes: perMessage)) }
      seenBeforeTheEnd = passedDown.take()
    }
    #expect(seenBeforeTheEnd.count == 1)
    #expect(seenBeforeTheEnd.flatMap(\.frames).count == FrameEncodingHandler.batchLimit / (FrameHeader.size + 1 + perMessage) + 1)
    let all = seenBeforeTheEnd + passedDown.take()
    #expect(all.flatMap(\.frames).map(\.callID) == (1...count).map(UInt32.init))
    _ = try channel.finish(acceptAlreadyClosed: false)
  }

  /// A message of the batch limit or more is not copied into the gathered frames: it goes
  /// down as it is, after them.
  @Test func aLargeMessageGoesDownOnItsOwnAfterTheGatheredFrames() throws {
    let (channel, output, passedDown) = try Self.coalescer()
    let large = Self.message(3, bytes: FrameEncodingHandler.batchLimit)
    output.burst {
      output.write(Self.message(1, bytes: 10))
      output.write(large)
      output.write(Self.message(5, bytes: 10))
    }
    let elements = passedDown.take()
    #expect(elements.count == 3)
    #expect(elements[1] == large)
    #expect(elements.flatMap(\.frames).map(\.callID) == [1, 3, 5])
    _ = try channel.finish(acceptAlreadyClosed: false)
  }

  /// What an encoder appends straight to the gathered frames joins them; if it throws, what it
  /// appended is dropped, and the frames gathered before stay.
  @Test func framesEncodedInPlaceJoinTheGatheredOnesUnlessTheEncoderThrows() throws {
    struct Failure: Error {}
    let (channel, output, passedDown) = try Self.coalescer()
    output.burst {
      output.write(Self.message(1, bytes: 10))
      #expect(throws: Failure.self) {
        try output.writeEncoded { (frames: inout [UInt8]) throws(Failure) in
          frames += Frame(kind: .halfClose, callID: 9).bytes
          throw Failure()
        }
      }
      output.writeEncoded { frames in frames += Frame(kind: .halfClose, callID: 3).bytes }
      output.write(Self.message(5, bytes: 10))
    }
    #expect(passedDown.take().flatMap(\.frames).map(\.callID) == [1, 3, 5])
    _ = try channel.finish(acceptAlreadyClosed: false)
  }

  /// Writes outside a burst wait for one flush, run after the jobs already queued on the loop.
  @Test func writesOutsideABurstLeaveTogetherInOneFlushLater() throws {
    let (channel, output, passedDown) = try Self.coalescer()
    output.write(Self.message(1, bytes: 10))
    output.write(Self.message(3, bytes: 10))
    #expect(passedDown.take().isEmpty)
    channel.embeddedEventLoop.run()
    let elements = passedDown.take()
    #expect(elements.count == 1)
    #expect(elements.flatMap(\.frames).map(\.callID) == [1, 3])
    _ = try channel.finish(acceptAlreadyClosed: false)
  }
  /// A close with nothing of its own to send (a client that shut its side down, whose calls
  /// have all ended) first sends what the connection wrote before it: frames still gathered
  /// for a later flush go down, and the channel closes only once they are written.
  @Test func aCloseWithNothingToSendSendsTheFramesWrittenBeforeIt() throws {
    let (channel, output, passedDown) = try Self.coalescer()
    output.write(Self.message(1, bytes: 10))
    output.close(after: [])
    let frames = passedDown.take().flatMap(\.frames)
    #expect(frames.map(\.callID) == [1])
    channel.embeddedEventLoop.run()
    #expect(!channel.isActive)
  }
}
