import NIOCore
import PushlineTesting
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import PushlineWire
import Synchronization
import Testing

@Suite("Graceful shutdown over loopback TCP")
struct GracefulShutdownTests {
  /// A router whose `/test.Slow/Forever` runs until cancelled, and a signal for each start.
  static func routerWithACallThatNeverEnds() -> (RPCRouter, AsyncStream<Void>) {
    let (started, reportStart) = AsyncStream<Void>.makeStream()
    var router = RPCRouter()
    router.registerUnary("/test.Slow/Forever", request: MetadataEntry.self, response: MetadataEntry.self) { _, _ in
      reportStart.yield()
      let (never, _) = AsyncStream<Void>.makeStream()
      for await _ in never {}
      throw CancellationError()
    }
    return (router, started)
  }

  /// Serves `router` with `gracePeriod`, runs `body` on a connection to it with a function that
  /// begins the graceful shutdown (the GOAWAY), and returns once the server has stopped.
  static func withServer(
    _ router: RPCRouter, gracePeriod: Duration, _ body: (RPCConnection, _ shutDown: () -> Void) async throws -> Void
  ) async throws {
    let (ports, reportPort) = AsyncStream<Int>.makeStream()
    let (stop, stopServer) = AsyncStream<Void>.makeStream()
    let server = Task {
      try await RPCServer(router: router, configuration: .init(port: 0, gracePeriod: gracePeriod)).withRunningServer { address in
        reportPort.yield(address.port!)
        for await _ in stop { break }
      }
    }
    var portIterator = ports.makeAsyncIterator()
    let port = try #require(await portIterator.next())
    try await RPCClient.withConnection(host: "127.0.0.1", port: port) { connection in
      try await body(connection) { stopServer.yield() }
    }
    try await server.value
  }

  /// A stream that says it is open with one response, then ends when its connection's GOAWAY
  /// goes out. The GOAWAY precedes the stream's STATUS on the wire, so a client that has seen
  /// the stream end has seen the GOAWAY.
  final class EndsAtTheGoAway: ResponseSource {
    private let state = Mutex((saidOpen: false, isGoingAway: false))

    func nextResponses(into batch: inout ResponseBatch) throws(RPCError) {
      let (saysOpen, ends) = state.withLock { state in
        defer { state.saidOpen = true }
        return (!state.saidOpen && !state.isGoingAway, state.isGoingAway)
      }
      if saysOpen { batch.append(MetadataEntry(key: "open")) }
      if ends { batch.endStream() }
    }

    var hasMoreResponses: Bool { false }

    func connectionIsGoingAway() {
      state.withLock { $0.isGoingAway = true }
    }
  }

  /// The server shuts down while a call is in flight: the call completes, the server stops
  /// afterwards, and the client's connection takes no new calls, saying when to come back.
  @Test(.timeLimit(.minutes(1))) func aCallInFlightCompletesAfterTheGoAway() async throws {
    let (started, reportStart) = AsyncStream<Void>.makeStream()
    let (gate, openGate) = AsyncStream<Void>.makeStream()
    var router = RPCRouter()
    router.registerUnary("/test.Slow/Call", request: MetadataEntry.self, response: MetadataEntry.self) { request, _ in
      reportStart.yield()
      for await _ in gate { break }  // Until the test lets it finish.
      return request
    }
    router.registerServerStreaming("/test.Watch/GoAway", request: MetadataEntry.self, response: MetadataEntry.self) { _, writer, _ in
      writer.pump(from: EndsAtTheGoAway())?.wake()  // the first pull: the stream says it is open
    }
    try await Self.withServer(router, gracePeriod: .seconds(60)) { connection, shutDown in
      var watch = connection.serverStreaming("/test.Watch/GoAway", request: MetadataEntry(), response: MetadataEntry.self).makeAsyncIterator()
      #expect(try await watch.next()?.key == "open")
      let slow = Task { try await connection.unary("/test.Slow/Call", request: MetadataEntry(key: "in flight"), response: MetadataEntry.self) }
      var startedIterator = started.makeAsyncIterator()
      await startedIterator.next()
      shutDown()  // GOAWAY now; the call keeps running.
      #expect(try await watch.next() == nil)  // the stream ended after the GOAWAY: the client has it
      openGate.yield()
      let finished = try await slow.value
      #expect(finished.key == "in flight")
      // Refused with the GOAWAY's hint, drawn from the reconnect spread (5 s by default).
      await #expect {
        try await connection.unary(HealthService.checkMethod, request: HealthCheckRequest(), response: HealthCheckResponse.self)
      } throws: { ($0 as? RPCError)?.code == .unavailable && (0...5000).contains(($0 as? RPCError)?.retryAfterMillis ?? .max) }
    }
  }

  /// From its connection's GOAWAY a pipelined call takes no more requests: those it has are
  /// answered, then it ends with UNAVAILABLE and the GOAWAY's retry hint, and a request sent
  /// after the GOAWAY fails with that status instead of an answer.
  @Test(.timeLimit(.minutes(1))) func aPipelinedCallAnswersWhatItHasThenEndsAtTheGoAway() async throws {
    let held = HeldCompletions()
    var router = RPCRouter()
    router.registerPipelined("/test.Pipelined/Held", request: MetadataEntry.self, response: MetadataEntry.self) { _, _, completion in
      held.hold(completion)
    }
    router.registerServerStreaming("/test.Watch/GoAway", request: MetadataEntry.self, response: MetadataEntry.self) { _, writer, _ in
      writer.pump(from: EndsAtTheGoAway())?.wake()
    }
    try await Self.withServer(router, gracePeriod: .seconds(60)) { connection, shutDown in
      var watch = connection.serverStreaming("/test.Watch/GoAway", request: MetadataEntry(), response: MetadataEntry.self).makeAsyncIterator()
      #expect(try await watch.next()?.key == "open")
      let pipeline = connection.pipeline("/test.Pipelined/Held", request: MetadataEntry.self, response: MetadataEntry.self)
      var arrivals = held.arrivals.makeAsyncIterator()
      let first = Task { try await pipeline.send(MetadataEntry(key: "0")) }
      _ = await arrivals.next()
      let second = Task { try await pipeline.send(MetadataEntry(key: "1")) }
      _ = await arrivals.next()
      shutDown()
      #expect(try await watch.next() == nil)  // the client has the GOAWAY
      // Sent after the GOAWAY (on a call started before it): no handler takes it.
      let late = Task { try await pipeline.send(MetadataEntry(key: "late")) }
      for (index, completion) in held.completions.withLock({ $0 }).enumerated() { completion.succeed(MetadataEntry(key: "\(index)")) }
      let answers = [try await first.value.key, try await second.value.key]
      #expect(answers == ["0", "1"])
      // With the GOAWAY's hint, as any UNAVAILABLE of a shutdown.
      await #expect { try await late.value } throws: { ($0 as? RPCError)?.code == .unavailable && ($0 as? RPCError)?.retryAfterMillis != nil }
      #expect(held.completions.withLock { $0.count } == 2)
    }
  }

  /// A stream whose client reads nothing ends at its connection's GOAWAY all the same: the
  /// server stops soon after, not after its grace period (a minute here, the test's limit).
  @Test(.timeLimit(.minutes(1))) func aStreamToAClientThatReadsNothingEndsAtTheGoAway() async throws {
    let flood = FloodEndingAtTheGoAway()
    var router = RPCRouter()
    router.registerServerStreaming("/test.Watch/Flood", request: MetadataEntry.self, response: MetadataEntry.self) { _, writer, _ in
      writer.pump(from: flood)?.wake()
    }
    let (ports, reportPort) = AsyncStream<Int>.makeStream()
    let server = Task {
      try await RPCServer(router: router, configuration: .init(port: 0, gracePeriod: .seconds(120))).withRunningServer { address in
        reportPort.yield(address.port!)
        var full = flood.channelFull.makeAsyncIterator()
        await full.next()  // the client has let the connection fill
      }
    }
    var portIterator = ports.makeAsyncIterator()
    let port = try #require(await portIterator.next())
    let client = try await RawPeer.connectReadingNothing(to: port, calling: "/test.Watch/Flood")
    try await server.value
    #expect(flood.endedAtTheGoAway.withLock { $0 })
    try? await client.close()
  }

  /// Hands out a 60 KiB response per pull until its connection goes away, then ends; says when
  /// its connection stops taking bytes.
  final class FloodEndingAtTheGoAway: ResponseSource {
    let (channelFull, reportFull) = AsyncStream<Void>.makeStream()
    let isGoingAway = Mutex(false)
    let endedAtTheGoAway = Mutex(false)

    func nextResponses(into batch: inout ResponseBatch) {
      guard !isGoingAway.withLock({ $0 }) else {
        endedAtTheGoAway.withLock { $0 = true }
        return batch.endStream()
      }
      batch.append(MetadataEntry(key: String(repeating: "x", count: 60_000)))
    }

    func connectionIsGoingAway() {
      isGoingAway.withLock { $0 = true }
    }

    func connectionWritabilityChanged(_ isWritable: Bool) {
      if !isWritable { reportFull.yield() }
    }
  }

  /// A server whose task is cancelled stops at once: its connections close without waiting
  /// for the grace period, the calls on them fail, and the server throws `CancellationError`
  /// (it cut them short).
  @Test(.timeLimit(.minutes(1))) func aCancelledServerClosesItsConnectionsAtOnce() async throws {
    let (router, started) = Self.routerWithACallThatNeverEnds()
    let (ports, reportPort) = AsyncStream<Int>.makeStream()
    let server = Task {
      try await RPCServer(router: router, configuration: .init(port: 0, gracePeriod: .seconds(600))).withRunningServer { address in
        reportPort.yield(address.port!)
        let (never, _) = AsyncStream<Void>.makeStream()
        for await _ in never {}  // until cancelled
      }
    }
    var portIterator = ports.makeAsyncIterator()
    let port = try #require(await portIterator.next())
    try await RPCClient.withConnection(host: "127.0.0.1", port: port) { connection in
      let forever = Task { try await connection.unary("/test.Slow/Forever", request: MetadataEntry(key: "k"), response: MetadataEntry.self) }
      var startedIterator = started.makeAsyncIterator()
      await startedIterator.next()
      server.cancel()
      // Ends long before the 600 s grace period.
      await #expect(throws: CancellationError.self) { try await server.value }
      await #expect(throws: RPCError.self) { try await forever.value }
    }
  }

  /// A server cancelled once its last connection has gone cut nothing short: it returns what
  /// its body returned, as from a graceful shutdown (a deadline passing just as the shutdown
  /// ends must not turn it into a failure).
  @Test(.timeLimit(.minutes(1))) func aServerCancelledWithNoConnectionLeftReturns() async throws {
    let (cancelled, reportCancelled) = AsyncStream<Void>.makeStream()
    let server = Task {
      try await RPCServer(router: RPCRouter(), configuration: .init(port: 0)).withRunningServer { _ in
        withUnsafeCurrentTask { $0?.cancel() }
        reportCancelled.yield()
        return "served"
      }
    }
    var cancelledIterator = cancelled.makeAsyncIterator()
    await cancelledIterator.next()
    #expect(try await server.value == "served")
  }

  /// Handlers that outlive the grace period are cancelled, and the server still stops.
  @Test func handlersPastTheGracePeriodAreCancelled() async throws {
    let (router, started) = Self.routerWithACallThatNeverEnds()
    try await Self.withServer(router, gracePeriod: .milliseconds(50)) { connection, shutDown in
      let forever = Task { try await connection.unary("/test.Slow/Forever", request: MetadataEntry(key: "k"), response: MetadataEntry.self) }
      var startedIterator = started.makeAsyncIterator()
      await startedIterator.next()
      shutDown()
      await #expect { try await forever.value } throws: { ($0 as? RPCError)?.code == .cancelled }
    }
  }

  /// A completing handler that never answers does not hold the shutdown open: at the end of
  /// the grace period its call ends with UNAVAILABLE, and the server stops.
  @Test(.timeLimit(.minutes(1))) func unansweredCompletingCallsEndWithTheGracePeriod() async throws {
    let (started, reportStart) = AsyncStream<Void>.makeStream()
    var router = RPCRouter()
    router.registerUnary("/test.Slow/Unanswered", request: MetadataEntry.self, response: MetadataEntry.self) { _, _, _ in
      reportStart.yield()
    }
    try await Self.withServer(router, gracePeriod: .milliseconds(50)) { connection, shutDown in
      let unanswered = Task {
        try await connection.unary("/test.Slow/Unanswered", request: MetadataEntry(key: "k"), response: MetadataEntry.self)
      }
      var startedIterator = started.makeAsyncIterator()
      await startedIterator.next()
      shutDown()
      await #expect { try await unanswered.value } throws: { ($0 as? RPCError)?.code == .unavailable }
    }
  }
}
