import NIOCore
import NIOPosix
import PushlineRPC
@testable import PushlineRPCNIO
import PushlineSchema
import PushlineWire

/// A peer that speaks raw bytes to a server, for tests of peers that misbehave.
enum RawPeer {
  /// Connects to `port`, sends `bytes` in one write, and returns everything the server sends
  /// until it closes the connection.
  static func send(_ bytes: [UInt8], to port: Int) async throws -> ByteBuffer {
    let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: port) { channel in
      channel.eventLoop.makeCompletedFuture { try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel) }
    }
    return try await channel.executeThenClose { inbound, outbound in
      // The server may already have closed (an idle timeout that fired first, say): what it
      // sent before closing is still read below, and that is what the tests judge.
      try? await outbound.write(ByteBuffer(bytes: bytes))
      var received = ByteBuffer()
      for try await chunk in inbound { received.writeImmutableBuffer(chunk) }  // Until the server closes.
      return received
    }
  }

  /// The bytes a well-behaved client opens with: its preface and a `ClientHello`.
  static var opening: [UInt8] {
    let hello = ClientHello(minVersion: 1, maxVersion: 1)
    return ConnectionPreface().bytes + Frame(kind: .handshake, callID: 0, payload: hello.serializedBytes()).bytes
  }

  /// The server's preface and frames in `bytes`, in order.
  static func elements(in bytes: ByteBuffer) throws -> [ConnectionElement] {
    var decoder = FrameDecoder(maxPayloadLength: FrameHeader.maxPayloadLength)
    var bytes = bytes
    var elements: [ConnectionElement] = []
    while let element = try decoder.decodeElement(from: &bytes) { elements.append(element) }
    return elements
  }
}
