import NIOCore
import NIOPosix
import PushlineBroker
import PushlineRPC
@testable import PushlineRPCNIO
import PushlineSchema
import PushlineTesting
import PushlineWire
import Synchronization

/// A subscriber over a real socket that reads only when told to — so that the broker sees a
/// connection that stops taking bytes, and coalesces — and decodes what it has received when
/// asked: the updates of its one Subscribe call, and the call's status once it has ended.
final class RawSubscriber: Sendable {
  /// Collects what the server sends, and says when more has come (or the connection closed).
  final class Collector: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let received = Mutex(ByteBuffer())
    let arrivals = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
      var chunk = unwrapInboundIn(data)
      received.withLock { _ = $0.writeBuffer(&chunk) }
      arrivals.continuation.yield()
    }

    func channelInactive(context: ChannelHandlerContext) {
      arrivals.continuation.yield()
      context.fireChannelInactive()
    }
  }

  private struct Decoding {
    var decoder = FrameDecoder(maxPayloadLength: FrameHeader.maxPayloadLength)
    var pending = ByteBuffer()
    var status: CallStatus?
  }

  let channel: any Channel
  private let collector: Collector
  private let decoding = Mutex(Decoding())

  private init(channel: any Channel, collector: Collector) {
    self.channel = channel
    self.collector = collector
  }

  /// Connects to the broker on `port` with `token` and subscribes with `request`; reads are
  /// off until ``read()``. A small `receiveBuffer` makes the broker's side fill sooner.
  static func subscribe(port: Int, token: String, request: SubscribeRequest, receiveBuffer: Int? = nil) async throws -> RawSubscriber {
    var hello = ClientHello(minVersion: 1, maxVersion: 1)
    hello.authToken = token
    let opening =
      ConnectionPreface().bytes + Frame(kind: .handshake, callID: 0, payload: hello.serializedBytes()).bytes
      + Frame(kind: .callStart, callID: 1, payload: CallStart(method: BrokerService.subscribeMethod).serializedBytes()).bytes
      + Frame(kind: .message, callID: 1, payload: [0] + request.serializedBytes()).bytes + Frame(kind: .halfClose, callID: 1).bytes
    let collector = Collector()
    var bootstrap = ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).channelOption(.autoRead, value: false)
    if let receiveBuffer { bootstrap = bootstrap.channelOption(.socketOption(.so_rcvbuf), value: SocketOptionValue(receiveBuffer)) }
    let channel = try await bootstrap
      .channelInitializer { channel in
        // The opening goes from the event loop once connected, as a real client's handshake
        // does, so that a busy test process cannot make it late for the handshake deadline.
        channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandlers([RawPeer.Opener(opening), collector]) }
      }
      .connect(host: "127.0.0.1", port: port).get()
    return RawSubscriber(channel: channel, collector: collector)
  }

  /// Reads what the socket holds, once (the bytes arrive in the background).
  func read() {
    channel.read()
  }

  /// Reads from now on whatever arrives.
  func readContinuously() async throws {
    try await channel.setOption(.autoRead, value: true).get()
    channel.read()
  }

  /// The updates received whole so far and not taken yet, in order.
  func takeUpdates() throws -> [TopicUpdate] {
    var chunk = collector.received.withLock { buffer in
      defer { buffer.clear() }
      return buffer
    }
    return try decoding.withLock { decoding in
      decoding.pending.writeBuffer(&chunk)
      var updates: [TopicUpdate] = []
      while let element = try decoding.decoder.decodeElement(from: &decoding.pending) {
        guard case .frame(let frame) = element, frame.callID == 1 else { continue }
        switch frame.kind {
        case .message: updates.append(try TopicUpdate(serializedBytes: Array(frame.payload.dropFirst())))
        case .status: decoding.status = try CallStatus(serializedBytes: frame.payload)
        default: break
        }
      }
      decoding.pending.discardReadBytes()
      return updates
    }
  }

  /// The Subscribe call's status, once the broker has ended it (among what was taken).
  var status: CallStatus? { decoding.withLock { $0.status } }

  /// Waits until more bytes arrive (or the connection closes), then takes the updates.
  func nextUpdates() async throws -> [TopicUpdate] {
    var arrivals = collector.arrivals.stream.makeAsyncIterator()
    _ = await arrivals.next()
    return try takeUpdates()
  }

  /// Drops the connection.
  func close() async {
    try? await channel.close()
  }
}
