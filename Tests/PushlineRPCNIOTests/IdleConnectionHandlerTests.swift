import NIOCore
import NIOEmbedded
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import PushlineWire
import Testing

/// Idleness on NIO's own clock: EmbeddedEventLoop.advanceTime, no sleeping.
@Suite("Idle connections")
struct IdleConnectionHandlerTests {
  static func channel(read: TimeAmount? = nil, write: TimeAmount? = nil) throws -> EmbeddedChannel {
    let channel = EmbeddedChannel()
    try channel.pipeline.syncOperations.addHandler(IdleConnectionHandler(readTimeout: read, pingInterval: write))
    try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 7400)).wait()
    return channel
  }

  @Test func aSilentPeerGetsAGoAwayAndIsClosed() throws {
    let channel = try Self.channel(read: .seconds(75))
    channel.embeddedEventLoop.advanceTime(by: .seconds(74))
    #expect(try channel.readOutbound(as: ConnectionElement.self) == nil)
    #expect(channel.isActive)
    channel.embeddedEventLoop.advanceTime(by: .seconds(1))
    guard case .frame(let frame)? = try channel.readOutbound(as: ConnectionElement.self), frame.kind == .goAway else {
      Issue.record("expected a GOAWAY")
      return
    }
    #expect(try GoAway(serializedBytes: frame.payload).code == StatusCode.unavailable.rawValue)
    #expect(!channel.isActive)
  }

  /// The idle GOAWAY names the highest call the peer started as the last one served: its
  /// client then takes the calls it had open for calls the server ran — not for calls never
  /// served, which it would retry.
  @Test func theIdleGoAwayNamesTheLastCallThePeerStarted() throws {
    let channel = try Self.channel(read: .seconds(75))
    for callID: UInt32 in [3, 7, 5] {
      let start = Frame(kind: .callStart, callID: callID, payload: CallStart(method: "/test.Echo/Echo").serializedBytes())
      try channel.writeInbound(ConnectionElement.frame(start))
      _ = try channel.readInbound(as: ConnectionElement.self)
    }
    channel.embeddedEventLoop.advanceTime(by: .seconds(150))
    guard case .frame(let frame)? = try channel.readOutbound(as: ConnectionElement.self), frame.kind == .goAway else {
      Issue.record("expected a GOAWAY")
      return
    }
    #expect(try GoAway(serializedBytes: frame.payload).lastCallID == 7)
  }

  /// A peer that reads nothing cannot keep the connection by not taking its GOAWAY.
  @Test func aSilentPeerThatReadsNothingIsClosedWithoutItsGoAway() throws {
    let channel = EmbeddedChannel()
    let held = HeldWrites()
    try channel.pipeline.syncOperations.addHandlers([held, IdleConnectionHandler(readTimeout: .seconds(75))])
    try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 7400)).wait()
    channel.embeddedEventLoop.advanceTime(by: .seconds(75))
    #expect(held.count == 1)  // the GOAWAY, waiting
    #expect(channel.isActive)
    channel.embeddedEventLoop.advanceTime(by: .seconds(2))
    #expect(!channel.isActive)
  }

  @Test func aReadInEveryPeriodKeepsTheConnectionOpen() throws {
    let channel = try Self.channel(read: .seconds(10))
    for _ in 0..<5 {
      try channel.writeInbound(ConnectionElement.frame(Frame(kind: .pong, callID: 0, payload: [1, 2, 3, 4, 5, 6, 7, 8])))
      _ = try channel.readInbound(as: ConnectionElement.self)
      channel.embeddedEventLoop.advanceTime(by: .seconds(10))
    }
    #expect(channel.isActive)
    #expect(try channel.readOutbound(as: ConnectionElement.self) == nil)
    channel.embeddedEventLoop.advanceTime(by: .seconds(10))  // A whole period of silence.
    #expect(!channel.isActive)
  }

  /// Silence lasts at most one interval: a connection that stops writing sends its first PING
  /// no later than one interval after its last write, then one PING an interval, not more.
  @Test func aQuietConnectionPingsWithinOneIntervalOfItsLastWrite() throws {
    let channel = try Self.channel(write: .seconds(20))
    for _ in 0..<30 {  // a write every second: one just after any check
      channel.embeddedEventLoop.advanceTime(by: .seconds(1))
      try channel.writeOutbound(ConnectionElement.frame(Frame(kind: .halfClose, callID: 1)))
      #expect(try channel.readOutbound(as: ConnectionElement.self)?.frame?.kind == .halfClose)
    }
    for _ in 0..<3 {
      channel.embeddedEventLoop.advanceTime(by: .seconds(20))
      let frame = try channel.readOutbound(as: ConnectionElement.self)?.frame
      #expect(frame?.kind == .ping && frame?.payload.count == 8)
      #expect(try channel.readOutbound(as: ConnectionElement.self) == nil)
    }
    #expect(channel.isActive)
  }
}
