import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import PushlineTesting
import PushlineWire
import Testing

@Suite("Ping flood over loopback TCP")
struct PingFloodTests {
  /// A peer that pings past the budget with no call in between gets its PONGs up to the budget,
  /// then GOAWAY RESOURCE_EXHAUSTED and a close; a well-behaved client of the same server keeps
  /// making calls throughout.
  @Test func aFloodingPeerIsCutOffWhileOthersAreServed() async throws {
    let budget = ServerConnectionStateMachine.Configuration().pingBudget
    let ping = Frame(kind: .ping, callID: 0, payload: [1, 2, 3, 4, 5, 6, 7, 8]).bytes
    try await LoopbackTests.withServer { port in
      try await RPCClient.withConnection(host: "127.0.0.1", port: port) { connection in
        let flood = Task { try await RawPeer.send(RawPeer.opening + Array((0...budget).map { _ in ping }.joined()), to: port) }
        for index in 0..<50 {
          let echoed = try await connection.unary(LoopbackTests.echo, request: MetadataEntry(key: "\(index)"), response: MetadataEntry.self)
          #expect(echoed.key == "\(index)")
        }
        let received = try RawPeer.elements(in: try await flood.value)
        let frames = received.compactMap { if case .frame(let frame) = $0 { frame } else { nil } }
        #expect(frames.first?.kind == .handshake)
        #expect(frames.filter { $0.kind == .pong }.count == budget)
        let goAway = try #require(frames.last)
        #expect(goAway.kind == .goAway)
        #expect(try GoAway(serializedBytes: goAway.payload).code == StatusCode.resourceExhausted.rawValue)
        // The well-behaved connection outlives the flooding one.
        let after = try await connection.unary(LoopbackTests.echo, request: MetadataEntry(key: "after"), response: MetadataEntry.self)
        #expect(after.key == "after")
      }
    }
  }
}
