import NIOCore
import NIOEmbedded
import PushlineRPC
@testable import PushlineRPCNIO
import Testing

/// The pipeline the server gives each accepted connection, on an EmbeddedChannel, which lets
/// the test say when the connection takes bytes.
@Suite("Server connection pipeline")
struct ServerPipelineTests {
  /// A peer that does not read what it is sent is not read from either, so the answers its
  /// requests make the server write stay bounded; once it reads again, so does the server.
  @Test func aPeerThatDoesNotReadIsNotReadFrom() throws {
    let channel = EmbeddedChannel()
    let counter = OutboundEventCounter<ByteBuffer>()
    try channel.pipeline.syncOperations.addHandler(counter)
    try channel.pipeline.syncOperations.addHandlers(
      RPCServer.connectionHandlers(router: RPCRouter(), configuration: .init(), refusal: nil, pumps: nil))
    try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 7400)).wait()
    channel.read()
    #expect(counter.reads == 1)

    channel.isWritable = false
    channel.pipeline.fireChannelWritabilityChanged()
    channel.read()
    channel.read()
    #expect(counter.reads == 1)

    channel.isWritable = true
    channel.pipeline.fireChannelWritabilityChanged()
    #expect(counter.reads == 2)
    _ = try channel.finish()
  }
}
