public import NIOCore
import NIOPosix
public import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import PushlineWire

/// A peer that speaks raw bytes to a server on 127.0.0.1, for tests of peers that misbehave:
/// garbage instead of the preface, frames the protocol forbids, calls a client would not send.
public enum RawPeer {
  /// Connects to `port`, sends `bytes` in one write, and returns everything the server sends
  /// until it closes the connection.
  public static func send(_ bytes: [UInt8], to port: Int) async throws -> ByteBuffer {
    let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port) { channel in
      channel.eventLoop.makeCompletedFuture {
        try channel.pipeline.syncOperations.addHandler(Opener(bytes))
        return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
      }
    }
    return try await channel.executeThenClose { inbound, _ in
      var received = ByteBuffer()
      for try await chunk in inbound { received.writeImmutableBuffer(chunk) }  // Until the server closes.
      return received
    }
  }

  /// Connects to `port` with reads off — a client that reads nothing, whose socket the server
  /// fills — and opens a server stream of `method` with a `MetadataEntry` request as call 1.
  /// The caller closes the channel.
  public static func connectReadingNothing(to port: Int, calling method: String) async throws -> any Channel {
    let call = [
      Frame(kind: .callStart, callID: 1, payload: CallStart(method: method).serializedBytes()),
      Frame(kind: .message, callID: 1, payload: [0] + MetadataEntry(key: "go").serializedBytes()),
      Frame(kind: .halfClose, callID: 1),
    ]
    let opener = Opener(opening + call.flatMap(\.bytes))
    return try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
      .channelOption(.autoRead, value: false)
      .channelInitializer { channel in channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(opener) } }
      .connect(host: "127.0.0.1", port: port).get()
  }

  /// Sends its bytes once the connection is up, from the event loop, as a real client sends
  /// its handshake: a test process too busy to run the test's task for a while does not make
  /// them late for the server's handshake deadline.
  public final class Opener: ChannelInboundHandler, Sendable {
    public typealias InboundIn = ByteBuffer
    let bytes: [UInt8]

    /// An opener that sends `bytes`.
    public init(_ bytes: [UInt8]) {
      self.bytes = bytes
    }

    public func channelActive(context: ChannelHandlerContext) {
      context.writeAndFlush(NIOAny(ByteBuffer(bytes: bytes)), promise: nil)
      context.fireChannelActive()
    }
  }

  /// The bytes a well-behaved client opens with: its preface and a `ClientHello`.
  public static var opening: [UInt8] {
    let hello = ClientHello(minVersion: 1, maxVersion: 1)
    return ConnectionPreface().bytes + Frame(kind: .handshake, callID: 0, payload: hello.serializedBytes()).bytes
  }

  /// The server's preface and frames in `bytes`, in order.
  ///
  /// - Throws: ``ProtocolViolation`` where `bytes` are not a preface and frames.
  public static func elements(in bytes: ByteBuffer) throws -> [ConnectionElement] {
    var decoder = FrameDecoder(maxPayloadLength: FrameHeader.maxPayloadLength)
    var bytes = bytes
    var elements: [ConnectionElement] = []
    while let element = try decoder.decodeElement(from: &bytes) { elements.append(element) }
    return elements
  }
}
