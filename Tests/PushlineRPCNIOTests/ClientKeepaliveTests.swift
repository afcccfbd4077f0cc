import NIOCore
import NIOEmbedded
import PushlineRPC
@testable import PushlineRPCNIO
import PushlineSchema
import PushlineWire
import Testing

/// The client keeps to the keepalive interval its server announces, on NIO's own clock: the
/// client's connection handler and idle handler on an EmbeddedChannel, the server's handshake
/// written to it, time advanced with `advanceTime`.
@Suite("Client keepalive")
struct ClientKeepaliveTests {
  /// A client with its own ping interval of 20 s (and a read timeout, if given), connected,
  /// that has just read the server's handshake announcing `announcedMillis`.
  static func connection(announcing announcedMillis: UInt32?, readTimeout: TimeAmount? = nil) throws -> EmbeddedChannel {
    let channel = EmbeddedChannel()
    let ready = channel.eventLoop.makePromise(of: ClientConnectionStateMachine.Server.self)
    try channel.pipeline.syncOperations.addHandlers([
      IdleConnectionHandler(readTimeout: readTimeout, pingInterval: .seconds(20)),
      ClientConnectionHandler(configuration: .init(), ready: ready),
    ])
    try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 7400)).wait()
    channel.embeddedEventLoop.run()
    while try channel.readOutbound(as: ConnectionElement.self) != nil {}  // the preface and ClientHello
    var hello = ServerHello(version: 1)
    hello.keepaliveIntervalMillis = announcedMillis
    try channel.writeInbound(ConnectionElement.preface(ConnectionPreface()))
    try channel.writeInbound(ConnectionElement.frame(Frame(kind: .handshake, callID: 0, payload: hello.serializedBytes())))
    #expect(try ready.futureResult.wait().keepaliveIntervalMillis == announcedMillis)
    return channel
  }

  /// When the client sends PINGs over `duration` from now, in milliseconds since now (looked
  /// at every 100 ms). It sends nothing else.
  static func pingTimes(on channel: EmbeddedChannel, over duration: TimeAmount) throws -> [Int64] {
    let step = TimeAmount.milliseconds(100)
    var times: [Int64] = []
    for tick in 1...(duration.nanoseconds / step.nanoseconds) {
      channel.embeddedEventLoop.advanceTime(by: step)
      while let element = try channel.readOutbound(as: ConnectionElement.self) {
        #expect(element.frame?.kind == .ping)
        times.append(tick * 100)
      }
    }
    return times
  }

  /// Whether the PINGs keep to `interval` in milliseconds: the first within it of the
  /// handshake (the client's last write), each next one exactly one interval later.
  static func keep(_ times: [Int64], to interval: Int64) -> Bool {
    guard let first = times.first else { return false }
    return first <= interval && zip(times, times.dropFirst()).allSatisfy { $1 - $0 == interval }
  }

  @Test func aShorterAnnouncedIntervalIsKeptTo() throws {
    let channel = try Self.connection(announcing: 2_000)
    let times = try Self.pingTimes(on: channel, over: .seconds(10))
    #expect(Self.keep(times, to: 2_000), "PINGs at \(times) ms")
    _ = try channel.finish()
  }

  /// A server cannot make the client ping more than once a second.
  @Test(arguments: [0, 200] as [UInt32])
  func anIntervalBelowTheFloorIsRaisedToIt(announcedMillis: UInt32) throws {
    let channel = try Self.connection(announcing: announcedMillis)
    let times = try Self.pingTimes(on: channel, over: .seconds(10))
    #expect(ClientConnectionHandler.shortestServerKeepalive == .seconds(1))
    #expect(Self.keep(times, to: 1_000), "PINGs at \(times) ms")
    _ = try channel.finish()
  }

  /// A server that announces a longer interval, up to twice the client's, or none, leaves the
  /// client's own.
  @Test(arguments: [30_000, 40_000, nil] as [UInt32?])
  func aLongerOrNoAnnouncedIntervalLeavesTheClientsOwn(announcedMillis: UInt32?) throws {
    let channel = try Self.connection(announcing: announcedMillis)
    let times = try Self.pingTimes(on: channel, over: .seconds(70))
    #expect(Self.keep(times, to: 20_000), "PINGs at \(times) ms")
    _ = try channel.finish()
  }

  /// Pinging every 150 s for a server announcing 300 s, the client waits two intervals for its
  /// answers, not its own 60 s: a server that answers each PING and says nothing else keeps
  /// the connection, where the client had declared it dead at 120 s.
  @Test func aReadTimeoutUnderTwoIntervalsGrowsToTwo() throws {
    let channel = try Self.connection(announcing: 300_000, readTimeout: .seconds(60))
    var times: [Int64] = []
    for second in 1...700 {
      channel.embeddedEventLoop.advanceTime(by: .seconds(1))
      while let element = try channel.readOutbound(as: ConnectionElement.self) {
        let frame = try #require(element.frame)
        #expect(frame.kind == .ping, "\(frame)")
        times.append(Int64(second) * 1000)
        try channel.writeInbound(ConnectionElement.frame(Frame(kind: .pong, callID: 0, payload: frame.payload)))
      }
    }
    #expect(Self.keep(times, to: 150_000) && times.count >= 4 && channel.isActive, "PINGs at \(times) ms")
    _ = try channel.finish()
  }

  /// While a stream's consumer holds the connection's reads back, hearing nothing is the
  /// client's own doing: the read timeout does not declare the server dead; once the reads go
  /// again, it does.
  @Test func heldReadsAreNoSilence() throws {
    let channel = EmbeddedChannel()
    try channel.pipeline.syncOperations.addHandler(IdleConnectionHandler(readTimeout: .seconds(10)))
    try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 7400)).wait()
    channel.pipeline.triggerUserOutboundEvent(IdleConnectionHandler.ReadsHeld(isHeld: true), promise: nil)
    channel.embeddedEventLoop.advanceTime(by: .seconds(60))
    #expect(channel.isActive)
    channel.pipeline.triggerUserOutboundEvent(IdleConnectionHandler.ReadsHeld(isHeld: false), promise: nil)
    channel.embeddedEventLoop.advanceTime(by: .seconds(20))
    #expect(!channel.isActive)
  }

  /// A server announcing more than twice the client's interval is pinged every half of its
  /// own: PINGs closer than that count against its ping budget, and a quiet connection's tenth
  /// would end it.
  @Test func anIntervalUnderHalfTheAnnouncedOneIsRaisedToHalf() throws {
    let channel = try Self.connection(announcing: 60_000)
    let times = try Self.pingTimes(on: channel, over: .seconds(100))
    #expect(Self.keep(times, to: 30_000), "PINGs at \(times) ms")
    _ = try channel.finish()
  }
}
