import Dispatch
import NIOCore
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import Synchronization
import Testing

/// Unary methods registered as completing: no task per call, answered through a callback on
/// the event loop or from another thread, over real sockets.
@Suite("Completing unary handlers over loopback TCP")
struct CompletingHandlerTests {
  static let later = "/test.Completing/Later"
  static let now = "/test.Completing/Now"
  static let held = "/test.Completing/Held"
  static let twice = "/test.Completing/Twice"


  /// A server whose `later` answers from a Dispatch thread (the value uppercased, or
  /// FAILED_PRECONDITION for the value "fail"), whose `now` answers at once on the loop, whose
  /// `held` answers only when the test says so, and whose `twice` answers "first" from another
  /// thread and then, once that answer is on its way, "second" on the loop.
  static func withServer(held: HeldCompletions = HeldCompletions(), _ body: (Int) async throws -> Void) async throws {
    var router = RPCRouter()
    router.registerUnary(later, request: MetadataEntry.self, response: MetadataEntry.self) { request, _, completion in
      answerUppercasedFromAnotherThread(request, completion)
    }
    router.registerUnary(now, request: MetadataEntry.self, response: MetadataEntry.self) { request, _, completion in
      completion.complete(with: .success(request))
    }
    router.registerUnary(Self.held, request: MetadataEntry.self, response: MetadataEntry.self) { _, _, completion in
      held.hold(completion)
    }
    router.registerUnary(twice, request: MetadataEntry.self, response: MetadataEntry.self) { _, _, completion in
      let posted = DispatchSemaphore(value: 0)
      DispatchQueue.global().async {
        completion.succeed(MetadataEntry(key: "first"))
        posted.signal()
      }
      posted.wait()  // holds the loop for as long as the other thread takes to answer
      completion.succeed(MetadataEntry(key: "second"))
    }
    try await RPCServer(router: router, configuration: .init(port: 0)).withRunningServer { address in
      try await body(address.port!)
    }
  }

  /// Many calls in flight on one connection, answered from other threads in any order, each
  /// get their own answer; failures arrive as their statuses.
  @Test(.timeLimit(.minutes(1))) func answersFromOtherThreadsReachTheirOwnCalls() async throws {
    try await Self.withServer { port in
      try await RPCClient.withConnection(host: "127.0.0.1", port: port) { connection in
        try await expectConcurrentUppercasingCalls(Self.later, on: connection)
        var failing = MetadataEntry(key: "f")
        failing.value = "fail"
        await #expect { try await connection.unary(Self.later, request: failing, response: MetadataEntry.self) }
          throws: { ($0 as? RPCError) == RPCError(code: .failedPrecondition, message: "asked to fail") }
      }
    }
  }

  /// Only a call's first answer counts, even when it comes from another thread and a second
  /// one is given on the connection's loop before the first has reached it.
  @Test(.timeLimit(.minutes(1))) func theFirstAnswerCountsWhereverItComesFrom() async throws {
    try await Self.withServer { port in
      try await RPCClient.withConnection(host: "127.0.0.1", port: port) { connection in
        for _ in 0..<20 {
          let response = try await connection.unary(Self.twice, request: MetadataEntry(key: "k"), response: MetadataEntry.self)
          #expect(response.key == "first")
        }
      }
    }
  }

  /// An answer given on the loop itself goes out at once; a request that does not decode ends
  /// the call with INVALID_ARGUMENT before the handler runs, and the connection goes on.
  @Test(.timeLimit(.minutes(1))) func badRequestsAreRefusedAndTheConnectionGoesOn() async throws {
    try await Self.withServer { port in
      try await RPCClient.withConnection(host: "127.0.0.1", port: port) { connection in
        let response = try await connection.unary(Self.now, request: MetadataEntry(key: "k"), response: MetadataEntry.self)
        #expect(response.key == "k")
        // An OutageState with no fields is not a MetadataEntry: its required key is missing.
        await #expect { try await connection.unary(Self.now, request: OutageState(), response: MetadataEntry.self) }
          throws: { ($0 as? RPCError)?.code == .invalidArgument }
        let after = try await connection.unary(Self.now, request: MetadataEntry(key: "after"), response: MetadataEntry.self)
        #expect(after.key == "after")
      }
    }
  }

  /// A call whose deadline passes before its answer ends with DEADLINE_EXCEEDED; the late
  /// answer changes nothing, and the connection goes on serving.
  @Test(.timeLimit(.minutes(1))) func aLateAnswerIsDropped() async throws {
    let held = HeldCompletions()
    try await Self.withServer(held: held) { port in
      try await RPCClient.withConnection(host: "127.0.0.1", port: port) { connection in
        await #expect {
          try await connection.unary(Self.held, request: MetadataEntry(key: "k"), response: MetadataEntry.self, timeout: .milliseconds(50))
        } throws: { ($0 as? RPCError)?.code == .deadlineExceeded }
        for await _ in held.arrivals { break }
        for completion in held.completions.withLock({ $0 }) { completion.succeed(MetadataEntry(key: "late")) }
        let response = try await connection.unary(Self.now, request: MetadataEntry(key: "next"), response: MetadataEntry.self)
        #expect(response.key == "next")
      }
    }
  }
}
