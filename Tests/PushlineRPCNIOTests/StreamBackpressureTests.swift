import NIOCore
import NIOEmbedded
import PushlineRPC
import PushlineSchema
import PushlineWire
import Testing

@testable import PushlineRPCNIO

/// A stream whose consumer falls behind holds its connection's reading back: past
/// ``StreamCredit/pauseAt`` bytes handed over and not taken, the channel's next read waits
/// until the consumer is down to half — so a server sending faster than the client consumes
/// meets backpressure in its socket instead of the client's memory growing without bound.
@Suite("Stream backpressure")
struct StreamBackpressureTests {
  @Test(.timeLimit(.minutes(1))) func aConsumerBehindHoldsReadingBackUntilItIsDownToHalf() async throws {
    let channel = EmbeddedChannel()
    let reads = OutboundEventCounter<ConnectionElement>()
    let handler = ClientConnectionHandler(configuration: .init(compressions: []), ready: channel.eventLoop.makePromise())
    try channel.pipeline.syncOperations.addHandlers([reads, handler])
    try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 7400)).get()
    try channel.writeInbound(ConnectionElement.preface(ConnectionPreface()))
    try channel.writeInbound(ConnectionElement.frame(Frame(kind: .handshake, callID: 0, payload: ServerHello(version: 1).serializedBytes())))
    let connection = RPCConnection(channel: channel, handler: NIOLoopBound(handler, eventLoop: channel.eventLoop))
    var responses = connection.serverStreaming(HealthService.checkMethod, request: HealthCheckRequest(), response: MetadataEntry.self)
      .makeAsyncIterator()
    channel.embeddedEventLoop.run()  // the call's start, handed to the loop
    let callID: UInt32 = 1  // the connection's first call
    // Responses of 16,000 bytes, one read each, until the consumer holds the credit.
    var entry = MetadataEntry(key: "k")
    entry.value = String(repeating: "v", count: 15_990)
    let response = entry.serializedBytes()
    let needed = StreamCredit.pauseAt / response.count + 1
    for _ in 0..<needed {
      try channel.writeInbound(ConnectionElement.frame(Frame(kind: .message, callID: callID, payload: [0] + response)))
    }
    let readsBefore = reads.reads
    channel.read()
    #expect(reads.reads == readsBefore, "the read waits while the consumer is behind")
    // Taking responses until fewer than half are left lets the waiting read go.
    for _ in 0..<(needed - StreamCredit.pauseAt / 2 / response.count) { _ = try await responses.next() }
    channel.embeddedEventLoop.run()  // the consumer's word, handed to the loop
    #expect(reads.reads == readsBefore + 1)
    channel.read()
    #expect(reads.reads == readsBefore + 2)
    _ = try? channel.finish()
  }
}
