import Logging
import NIOCore
import NIOEmbedded
import PushlineRPC
import PushlineTesting
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
      RPCServer.connectionHandlers(router: RPCRouter(), configuration: .init(), refusal: nil, pumps: nil, violationLog: LogBudget()))
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

  /// A peer that breaks the protocol is logged at `notice`, with its address and the reason
  /// its GOAWAY gives; one refused or timed out only at `debug`, as a reconnect storm brings
  /// thousands of them.
  @Test func aConnectionClosedForBreakingTheProtocolIsLogged() throws {
    let records = RecordingLogHandler.Records()
    let configuration = RPCServer.Configuration(logger: RecordingLogHandler.logger(into: records))
    let channel = EmbeddedChannel()
    try channel.pipeline.syncOperations.addHandlers(
      RPCServer.connectionHandlers(router: RPCRouter(), configuration: configuration, refusal: nil, pumps: nil, violationLog: LogBudget()))
    try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 7400)).wait()
    try channel.writeInbound(ByteBuffer(string: "GET / HTTP/1.1\r\nHost: pushline\r\n\r\n"))
    let notices = records.all.filter { $0.level == .notice }
    #expect(notices.map(\.message) == ["closing a connection that broke the protocol"])
    #expect(notices.first?.metadata["peer"] == "[IPv4]127.0.0.1:7400" && notices.first?.metadata["reason"] != "")
    _ = try channel.finish(acceptAlreadyClosed: true)

    let refused = RecordingLogHandler.Records()
    let busy = EmbeddedChannel()
    try busy.pipeline.syncOperations.addHandlers(
      RPCServer.connectionHandlers(
        router: RPCRouter(), configuration: RPCServer.Configuration(logger: RecordingLogHandler.logger(into: refused)),
        refusal: RPCError(code: .unavailable, message: "too many clients", retryAfterMillis: 100), pumps: nil, violationLog: LogBudget()))
    try busy.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 7400)).wait()
    busy.embeddedEventLoop.advanceTime(by: .seconds(11))
    #expect(refused.all.map(\.level) == [.debug] && refused.all.first?.metadata["reason"] == "too many clients")
    _ = try busy.finish(acceptAlreadyClosed: true)
  }

  /// A flood of connections that break the protocol (a port scanner, a broken client build)
  /// is logged within the server's budget — 10 lines in 10 s — and the first line after it
  /// says how many were left out.
  @Test func connectionsBreakingTheProtocolAreLoggedWithinABudget() throws {
    let records = RecordingLogHandler.Records()
    let configuration = RPCServer.Configuration(logger: RecordingLogHandler.logger(into: records))
    let violationLog = LogBudget()
    let loop = EmbeddedEventLoop()
    func garbageConnection() throws {
      let channel = EmbeddedChannel(loop: loop)
      try channel.pipeline.syncOperations.addHandlers(
        RPCServer.connectionHandlers(router: RPCRouter(), configuration: configuration, refusal: nil, pumps: nil, violationLog: violationLog))
      try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 7400)).wait()
      try channel.writeInbound(ByteBuffer(string: "GET / HTTP/1.1\r\n\r\n"))
      _ = try channel.finish(acceptAlreadyClosed: true)
    }
    for _ in 0..<25 { try garbageConnection() }
    #expect(records.all.count == 10 && records.all.allSatisfy { $0.metadata["suppressed"] == nil })
    loop.advanceTime(by: .seconds(10))
    try garbageConnection()
    #expect(records.all.count == 11 && records.all.last?.metadata["suppressed"] == "15")
  }
}
