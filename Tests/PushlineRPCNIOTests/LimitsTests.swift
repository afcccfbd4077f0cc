import NIOCore
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import Synchronization
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

  /// Whether `error` is the server's refusal to send a response over the 1 KiB the client
  /// announced (the client's own refusal of such a message names no connection).
  static func isTheServersRefusal(_ error: any Error) -> Bool {
    guard let error = error as? RPCError else { return false }
    return error.code == .resourceExhausted && error.message.contains("over this connection's 1024-byte message limit")
  }

  /// A response over the message size the client announced is never sent: the server ends the
  /// call RESOURCE_EXHAUSTED instead (a task's unary answer), and the connection goes on.
  @Test func aResponseOverTheMessageLimitIsResourceExhausted() async throws {
    try await LoopbackTests.withServer { port in
      let client = ClientConnectionStateMachine.Configuration(limits: Self.limits, compressions: [])
      try await RPCClient.withConnection(host: "127.0.0.1", port: port, configuration: client) { connection in
        var request = MetadataEntry(key: "k")
        request.value = "2000"
        await #expect { try await connection.unary(LoopbackTests.big, request: request, response: MetadataEntry.self) }
          throws: { Self.isTheServersRefusal($0) }
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

  /// A pumped stream's response over the client's limit, and a completing handler's answer over
  /// it, end their calls with the server's RESOURCE_EXHAUSTED too: no path sends one.
  @Test(.timeLimit(.minutes(1))) func pumpedAndCompletingResponsesOverTheLimitAreNeverSent() async throws {
    /// A small response and a large one, in one pull.
    final class OneLargeResponse: ResponseSource {
      let pulled = Mutex(false)
      func nextResponses(into batch: inout ResponseBatch) {
        pulled.withLock { $0 = true }
        batch.append(MetadataEntry(key: "small"))
        var large = MetadataEntry(key: "large")
        large.value = String(repeating: "x", count: 2_000)
        batch.append(large)
      }
      var hasMoreResponses: Bool { !pulled.withLock { $0 } }
    }
    var router = RPCRouter()
    router.registerServerStreaming("/test.Large/Pumped", request: MetadataEntry.self, response: MetadataEntry.self) { _, writer, _ in
      _ = writer.pump(from: OneLargeResponse())
    }
    router.registerUnary("/test.Large/Completing", request: MetadataEntry.self, response: MetadataEntry.self) { _, _, completion in
      var large = MetadataEntry(key: "large")
      large.value = String(repeating: "x", count: 2_000)
      completion.succeed(large)
    }
    try await RPCServer(router: router, configuration: .init(port: 0)).withRunningServer { address in
      let client = ClientConnectionStateMachine.Configuration(limits: Self.limits, compressions: [])
      try await RPCClient.withConnection(host: "127.0.0.1", port: address.port!, configuration: client) { connection in
        var responses = connection.serverStreaming(
          "/test.Large/Pumped", request: MetadataEntry(key: "k"), response: MetadataEntry.self
        ).makeAsyncIterator()
        await #expect { _ = try await responses.next() } throws: { Self.isTheServersRefusal($0) }
        await #expect { try await connection.unary("/test.Large/Completing", request: MetadataEntry(key: "k"), response: MetadataEntry.self) }
          throws: { Self.isTheServersRefusal($0) }
      }
    }
  }
}
