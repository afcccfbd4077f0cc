import Dispatch
import NIOCore
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import PushlineTesting
import PushlineWire
import Synchronization
import Testing

/// Pipelined calls over real sockets: many requests on one call, each answered by one
/// response in request order, whatever order the handler answers in.
@Suite("Pipelined calls over loopback TCP")
struct PipelinedCallTests {
  static let echo = "/test.Pipelined/Echo"
  static let held = "/test.Pipelined/Held"

  /// A server whose `echo` answers from a Dispatch thread (the value uppercased, or
  /// FAILED_PRECONDITION for the value "fail") and whose `held` answers only when the test
  /// says so.
  static func withServer(held: HeldCompletions = HeldCompletions(), _ body: (RPCConnection) async throws -> Void) async throws {
    var router = RPCRouter()
    router.registerPipelined(echo, request: MetadataEntry.self, response: MetadataEntry.self) { request, _, completion in
      answerUppercasedFromAnotherThread(request, completion)
    }
    router.registerPipelined(Self.held, request: MetadataEntry.self, response: MetadataEntry.self) { _, _, completion in
      held.hold(completion)
    }
    try await RPCServer(router: router, configuration: .init(port: 0)).withRunningServer { address in
      try await RPCClient.withConnection(host: "127.0.0.1", port: address.port!) { connection in
        try await body(connection)
      }
    }
  }

  static func entry(_ key: String, _ value: String) -> MetadataEntry {
    var entry = MetadataEntry(key: key)
    entry.value = value
    return entry
  }

  /// Requests sent at once from many tasks on one pipeline each get their own answer, and the
  /// call ends OK once they are all answered.
  @Test(.timeLimit(.minutes(1))) func concurrentSendsEachGetTheirOwnAnswer() async throws {
    try await Self.withServer { connection in
      let pipeline = connection.pipeline(Self.echo, request: MetadataEntry.self, response: MetadataEntry.self)
      try await withThrowingTaskGroup(of: Void.self) { group in
        for index in 0..<200 {
          group.addTask {
            let response = try await pipeline.send(Self.entry("\(index)", "v\(index)"))
            #expect(response.key == "\(index)" && response.value == "V\(index)")
          }
        }
        try await group.waitForAll()
      }
      try await pipeline.finish()
      await #expect { try await pipeline.send(MetadataEntry(key: "after")) } throws: { ($0 as? RPCError)?.code == .failedPrecondition }
    }
  }

  /// Answers given in reverse order leave in request order: the client, which matches answers
  /// to requests by their order, gets each request's own. The call's end waits for the last.
  @Test(.timeLimit(.minutes(1))) func answersLeaveInRequestOrder() async throws {
    let held = HeldCompletions()
    try await Self.withServer(held: held) { connection in
      let pipeline = connection.pipeline(Self.held, request: MetadataEntry.self, response: MetadataEntry.self)
      try await withThrowingTaskGroup(of: Void.self) { group in
        for index in 0..<5 {
          // One at a time, so that the requests' order is known: request `index` is the
          // `index`th to arrive.
          group.addTask {
            let response = try await pipeline.send(MetadataEntry(key: "\(index)"))
            #expect(response.key == "\(index)")
          }
          var arrivals = held.arrivals.makeAsyncIterator()
          _ = await arrivals.next()
        }
        let completions = held.completions.withLock { $0 }
        for (index, completion) in completions.enumerated().reversed() { completion.succeed(MetadataEntry(key: "\(index)")) }
        try await group.waitForAll()
      }
      try await pipeline.finish()
    }
  }

  /// An answer that fails ends the call with its status: the requests still unanswered, and
  /// later sends, fail with it; the connection goes on serving.
  @Test(.timeLimit(.minutes(1))) func aFailedAnswerEndsTheCallWithItsStatus() async throws {
    try await Self.withServer { connection in
      let pipeline = connection.pipeline(Self.echo, request: MetadataEntry.self, response: MetadataEntry.self)
      #expect(try await pipeline.send(Self.entry("a", "x")).value == "X")
      await #expect { try await pipeline.send(Self.entry("b", "fail")) } throws: {
        ($0 as? RPCError) == RPCError(code: .failedPrecondition, message: "asked to fail")
      }
      await #expect { try await pipeline.send(Self.entry("c", "y")) } throws: { ($0 as? RPCError)?.code == .failedPrecondition }
      await #expect { try await pipeline.finish() } throws: { ($0 as? RPCError)?.code == .failedPrecondition }
      let next = connection.pipeline(Self.echo, request: MetadataEntry.self, response: MetadataEntry.self)
      #expect(try await next.send(Self.entry("d", "z")).value == "Z")
      try await next.finish()
    }
  }

  /// A request that does not decode ends the call with INVALID_ARGUMENT.
  @Test(.timeLimit(.minutes(1))) func aRequestThatDoesNotDecodeEndsTheCall() async throws {
    try await Self.withServer { connection in
      // An OutageState with no fields is not a MetadataEntry: its required key is missing.
      let pipeline = connection.pipeline(Self.echo, request: OutageState.self, response: MetadataEntry.self)
      await #expect { try await pipeline.send(OutageState()) } throws: { ($0 as? RPCError)?.code == .invalidArgument }
    }
  }

  /// A request that fails as it arrives — it does not decode, or its handler refuses it at
  /// once — stops its call there: the requests read after it, in the same burst, go to no
  /// handler (they are not applied unanswered).
  @Test(.timeLimit(.minutes(1))) func requestsAfterOneThatFailsAsItArrivesGoToNoHandler() async throws {
    let seen = Mutex<[String]>([])
    var router = RPCRouter()
    router.registerPipelined(Self.echo, request: MetadataEntry.self, response: MetadataEntry.self) { request, _, completion in
      seen.withLock { $0.append(request.key) }
      if request.key == "refuse" { return completion.fail(RPCError(code: .resourceExhausted, message: "refused as it arrives")) }
      completion.succeed(request)
    }
    try await RPCServer(router: router, configuration: .init(port: 0)).withRunningServer { address in
      func message(_ callID: UInt32, _ key: String) -> Frame {
        Frame(kind: .message, callID: callID, payload: [0] + MetadataEntry(key: key).serializedBytes())
      }
      let frames = [
        Frame(kind: .callStart, callID: 1, payload: CallStart(method: Self.echo).serializedBytes()),
        message(1, "a"), Frame(kind: .message, callID: 1, payload: [0, 0xFF]), message(1, "after a bad request"),
        Frame(kind: .callStart, callID: 3, payload: CallStart(method: Self.echo).serializedBytes()),
        message(3, "refuse"), message(3, "after a refusal"),
        Frame(kind: .halfClose, callID: 99),  // a call never started: the server closes the connection
      ]
      _ = try await RawPeer.send(RawPeer.opening + frames.flatMap(\.bytes), to: address.port!)
    }
    #expect(seen.withLock { $0 } == ["a", "refuse"])
  }

  /// A pipeline opened before the server's handshake keeps to the protocol's default window
  /// (100 requests unanswered); when the ServerHello agrees on a larger one, the requests
  /// waiting for room go out at once, before any answer frees room.
  @Test(.timeLimit(.minutes(1))) func aPipelineOpenedBeforeTheHandshakeGrowsToTheAgreedWindow() async throws {
    let (defaultWindow, agreedWindow) = (ConnectionLimits.defaults.maxConcurrentCalls, 150)
    let configuration = {
      var configuration = ClientConnectionStateMachine.Configuration(compressions: [])
      configuration.limits.maxConcurrentCalls = agreedWindow
      return configuration
    }()
    try await RawServer.run { port in
      try await RPCClient.withConnection(host: "127.0.0.1", port: port, configuration: configuration) { connection in
        let pipeline = connection.pipeline(Self.held, request: MetadataEntry.self, response: MetadataEntry.self)
        try await withThrowingTaskGroup(of: Void.self) { group in
          for index in 0..<agreedWindow {
            group.addTask {
              let answer = try await pipeline.send(MetadataEntry(key: "\(index)"))
              #expect(answer.key == "\(index)")
            }
          }
          try await group.waitForAll()
        }
      }
    } serve: { server in
      var requests: [(callID: UInt32, key: String)] = []
      func readRequests(upTo count: Int) async throws {
        while requests.count < count {
          guard case .frame(let frame) = try await server.next(), frame.kind == .message else { continue }
          // (The payload's first byte says whether it is compressed; nothing was offered.)
          requests.append((frame.callID, try MetadataEntry(serializedBytes: Array(frame.payload.dropFirst())).key))
        }
      }
      try await readRequests(upTo: defaultWindow)
      var hello = ServerHello(version: 1)
      var limits = Limits()
      limits.maxConcurrentCalls = UInt32(agreedWindow)
      hello.limits = limits
      try await server.send(ConnectionPreface().bytes + Frame(kind: .handshake, callID: 0, payload: hello.serializedBytes()).bytes)
      // Without the window growing, the other 50 would wait for answers this server gives
      // only once they have all arrived.
      try await readRequests(upTo: agreedWindow)
      for (callID, key) in requests {
        try await server.send(Frame(kind: .message, callID: callID, payload: [0] + MetadataEntry(key: key).serializedBytes()).bytes)
      }
    }
  }

  /// Sends requests keyed 0..<count on `pipeline` one at a time, each once the one before has
  /// reached the handler, so that request `index` is the `index`th to arrive; returns the
  /// tasks awaiting their answers.
  static func sendInOrder(
    _ count: Int, on pipeline: RPCPipeline<MetadataEntry, MetadataEntry>, held: HeldCompletions
  ) async -> [Task<MetadataEntry, any Error>] {
    var arrivals = held.arrivals.makeAsyncIterator()
    var sends: [Task<MetadataEntry, any Error>] = []
    for index in 0..<count {
      sends.append(Task { try await pipeline.send(MetadataEntry(key: "\(index)")) })
      _ = await arrivals.next()
    }
    return sends
  }

  /// A failed answer ends the call in its place in the order: the answers before it go out
  /// first, even when they come after it; the requests after it get the failure too, and
  /// their own answers, given later, change nothing.
  @Test(.timeLimit(.minutes(1))) func aFailureEndsTheCallAfterTheAnswersBeforeIt() async throws {
    let held = HeldCompletions()
    try await Self.withServer(held: held) { connection in
      let pipeline = connection.pipeline(Self.held, request: MetadataEntry.self, response: MetadataEntry.self)
      let sends = await Self.sendInOrder(3, on: pipeline, held: held)
      let completions = held.completions.withLock { $0 }
      completions[1].fail(RPCError(code: .aborted, message: "the second fails"))
      completions[2].succeed(MetadataEntry(key: "2"))
      completions[0].succeed(MetadataEntry(key: "0"))
      let answered = try await sends[0].value
      #expect(answered.key == "0")
      for send in sends[1...] {
        await #expect { try await send.value } throws: { ($0 as? RPCError) == RPCError(code: .aborted, message: "the second fails") }
      }
    }
  }

  /// Finishing a pipeline with answers still due ends the call only once they are given.
  @Test(.timeLimit(.minutes(1))) func finishingWaitsForTheAnswersStillDue() async throws {
    let held = HeldCompletions()
    try await Self.withServer(held: held) { connection in
      let pipeline = connection.pipeline(Self.held, request: MetadataEntry.self, response: MetadataEntry.self)
      let sends = await Self.sendInOrder(2, on: pipeline, held: held)
      let finished = Task { try await pipeline.finish() }
      for (index, completion) in held.completions.withLock({ $0 }).enumerated().reversed() {
        completion.succeed(MetadataEntry(key: "\(index)"))
      }
      #expect(try await sends[0].value.key == "0")
      #expect(try await sends[1].value.key == "1")
      try await finished.value
    }
  }
}

