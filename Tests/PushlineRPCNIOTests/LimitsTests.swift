import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import Testing

@Suite("Limits over loopback TCP")
struct LimitsTests {
  /// The server's limits: 1 KiB messages, two calls at a time.
  static let limits = ConnectionLimits(maxFrameSize: 1 << 20, maxMessageSize: 1_024, maxConcurrentCalls: 2)

  /// A request over the negotiated message size ends its call RESOURCE_EXHAUSTED (uncompressed,
  /// so the server's size check, not the inflate limit, is what refuses it); the connection
  /// goes on serving.
  @Test func aRequestOverTheMessageLimitIsResourceExhausted() async throws {
    try await LoopbackTests.withServer(connection: .init(limits: Self.limits)) { port in
      try await RPCClient.withConnection(host: "127.0.0.1", port: port, configuration: .init(compressions: [])) { connection in
        var request = MetadataEntry(key: "k")
        request.value = String(repeating: "x", count: 2_000)
        await #expect { try await connection.unary(LoopbackTests.echo, request: request, response: MetadataEntry.self) }
          throws: { ($0 as? RPCError)?.code == .resourceExhausted }
        let after = try await connection.unary(LoopbackTests.echo, request: MetadataEntry(key: "after"), response: MetadataEntry.self)
        #expect(after.key == "after")
      }
    }
  }

  /// With the default limits (1 MiB frames, 4 MiB messages), a 1.2 MB request and its
  /// response each cross in two MESSAGE frames, and the connection keeps serving. Uncompressed:
  /// a compressed message is split the same way, and a message large enough to stay over a
  /// frame once deflated would keep the shared event loops busy for seconds in a debug build.
  @Test func messagesLargerThanAFrame() async throws {
    try await LoopbackTests.withServer { port in
      try await RPCClient.withConnection(host: "127.0.0.1", port: port, configuration: .init(compressions: [])) { connection in
        var request = MetadataEntry(key: "big")
        request.value = String(repeating: "pushline ", count: 1_200_000 / 9)
        let response = try await connection.unary(LoopbackTests.echo, request: request, response: MetadataEntry.self)
        #expect(response.value == request.value?.uppercased())
        let after = try await connection.unary(LoopbackTests.echo, request: MetadataEntry(key: "after"), response: MetadataEntry.self)
        #expect(after.key == "after")
      }
    }
  }

  /// A response over the message size the client announced ends the call RESOURCE_EXHAUSTED on
  /// the client, which cancels it on the server.
  @Test func aResponseOverTheMessageLimitIsResourceExhausted() async throws {
    try await LoopbackTests.withServer { port in
      let client = ClientConnectionStateMachine.Configuration(limits: Self.limits, compressions: [])
      try await RPCClient.withConnection(host: "127.0.0.1", port: port, configuration: client) { connection in
        var request = MetadataEntry(key: "k")
        request.value = "2000"
        await #expect { try await connection.unary(LoopbackTests.big, request: request, response: MetadataEntry.self) }
          throws: { ($0 as? RPCError)?.code == .resourceExhausted }
        request.value = "10"
        let small = try await connection.unary(LoopbackTests.big, request: request, response: MetadataEntry.self)
        #expect(small.value == "bbbbbbbbbb")
      }
    }
  }

  /// With two calls running, a third is refused RESOURCE_EXHAUSTED; once one ends, calls are
  /// accepted again.
  @Test func moreConcurrentCallsThanTheLimitAreResourceExhausted() async throws {
    let (hangs, report) = AsyncStream<String>.makeStream()
    try await LoopbackTests.withServer(hangs: report, connection: .init(limits: Self.limits)) { port in
      try await RPCClient.withConnection(host: "127.0.0.1", port: port) { connection in
        var events = hangs.makeAsyncIterator()
        let first = Task { try await connection.unary(LoopbackTests.hang, request: MetadataEntry(key: "1"), response: MetadataEntry.self) }
        #expect(await events.next() == "started 1")
        let second = Task { try await connection.unary(LoopbackTests.hang, request: MetadataEntry(key: "2"), response: MetadataEntry.self) }
        #expect(await events.next() == "started 2")
        await #expect { try await connection.unary(LoopbackTests.echo, request: MetadataEntry(key: "3"), response: MetadataEntry.self) }
          throws: { ($0 as? RPCError)?.code == .resourceExhausted }
        first.cancel()
        await #expect { try await first.value } throws: { ($0 as? RPCError)?.code == .cancelled }
        #expect(await events.next() == "cancelled 1")
        let fourth = try await connection.unary(LoopbackTests.echo, request: MetadataEntry(key: "4"), response: MetadataEntry.self)
        #expect(fourth.key == "4")
        second.cancel()
        _ = await second.result
      }
    }
  }
}
