import NIOCore
import NIOPosix
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import PushlineTesting
import PushlineWire
import Testing

/// Real sockets on 127.0.0.1, a port the system picks.
@Suite("RPC over loopback TCP")
struct LoopbackTests {
  static let echo = "/test.Echo/Echo"
  static let deny = "/test.Echo/Deny"
  static let hang = "/test.Echo/Hang"
  static let count = "/test.Echo/Count"
  static let hangStream = "/test.Echo/HangStream"
  static let countThenFail = "/test.Echo/CountThenFail"
  static let big = "/test.Echo/Big"

  /// A server with an echo (uppercases the value), a method that always refuses, and one that
  /// reports on `hangs` when it starts, waits until it is cancelled, and reports that too.
  static func withServer(
    hangs: AsyncStream<String>.Continuation? = nil, idleTimeout: Duration = .seconds(75),
    connection: ServerConnectionStateMachine.Configuration = .init(), _ body: (Int) async throws -> Void
  ) async throws {
    var router = RPCRouter()
    router.registerUnary(echo, request: MetadataEntry.self, response: MetadataEntry.self) { request, context in
      var response = request
      response.value = (request.value ?? "").uppercased() + (context.peer.authToken.map { " for \($0)" } ?? "")
      return response
    }
    router.registerUnary(deny, request: MetadataEntry.self, response: MetadataEntry.self) { _, _ in
      throw RPCError(code: .permissionDenied, message: "not yours")
    }
    router.registerUnary(hang, request: MetadataEntry.self, response: MetadataEntry.self) { request, _ in
      hangs?.yield("started \(request.key)")
      let (never, _) = AsyncStream<Void>.makeStream()
      for await _ in never {}  // Ends only when the task is cancelled.
      hangs?.yield("cancelled \(request.key)")
      throw CancellationError()
    }
    // Streams `value` as a count: one response per number from 1, each keyed by its number.
    router.registerServerStreaming(count, request: MetadataEntry.self, response: MetadataEntry.self) { request, writer, _ in
      for number in 1...(Int(request.value ?? "0") ?? 0) { try await writer.write(MetadataEntry(key: "\(number)")) }
    }
    router.registerServerStreaming(hangStream, request: MetadataEntry.self, response: MetadataEntry.self) { request, _, _ in
      hangs?.yield("started \(request.key)")
      let (never, _) = AsyncStream<Void>.makeStream()
      for await _ in never {}
      hangs?.yield("cancelled \(request.key)")
      throw CancellationError()
    }
    router.registerServerStreaming(countThenFail, request: MetadataEntry.self, response: MetadataEntry.self) { _, writer, _ in
      try await writer.write(MetadataEntry(key: "1"))
      throw RPCError(code: .dataLoss, message: "lost the rest")
    }
    // Answers with a value of as many bytes as the request's value says.
    router.registerUnary(big, request: MetadataEntry.self, response: MetadataEntry.self) { request, _ in
      var response = request
      response.value = String(repeating: "b", count: Int(request.value ?? "0") ?? 0)
      hangs?.yield("answered \(request.key)")
      return response
    }
    let server = RPCServer(router: router, configuration: .init(port: 0, connection: connection, idleTimeout: idleTimeout))
    try await server.withRunningServer { address in try await body(address.port!) }
  }

  @Test func healthCheckAndUnaryCalls() async throws {
    try await Self.withServer { port in
      try await RPCClient.withConnection(host: "127.0.0.1", port: port, configuration: .init(authToken: "driver-42")) { connection in
        let health = try await connection.unary(HealthService.checkMethod, request: HealthCheckRequest(), response: HealthCheckResponse.self)
        #expect(health.status == .serving)
        var unknownService = HealthCheckRequest()
        unknownService.service = "pushline.Nope"
        let unknown = try await connection.unary(HealthService.checkMethod, request: unknownService, response: HealthCheckResponse.self)
        #expect(unknown.status == .serviceUnknown)
        var request = MetadataEntry(key: "k")
        request.value = "hello"
        let echoed = try await connection.unary(Self.echo, request: request, response: MetadataEntry.self)
        #expect(echoed.value == "HELLO for driver-42")
        try await connection.ping()
      }
    }
  }

  /// Messages above the compression threshold cross compressed both ways when the peers agree
  /// on deflate, and uncompressed when the client offers none.
  @Test("large messages, with and without compression", arguments: [[Compression.deflate], []])
  func largeMessages(compressions: [Compression]) async throws {
    try await Self.withServer { port in
      try await RPCClient.withConnection(host: "127.0.0.1", port: port, configuration: .init(compressions: compressions)) { connection in
        var request = MetadataEntry(key: "big")
        request.value = String(repeating: "card-update ", count: 20_000)
        let response = try await connection.unary(Self.echo, request: request, response: MetadataEntry.self)
        #expect(response.value == request.value?.uppercased())
      }
    }
  }

  @Test func failuresArriveAsStatuses() async throws {
    try await Self.withServer { port in
      try await RPCClient.withConnection(host: "127.0.0.1", port: port) { connection in
        await #expect { try await connection.unary("/test.Echo/Missing", request: MetadataEntry(key: "k"), response: MetadataEntry.self) }
          throws: { ($0 as? RPCError)?.code == .unimplemented }
        await #expect { try await connection.unary(Self.deny, request: MetadataEntry(key: "k"), response: MetadataEntry.self) }
          throws: { ($0 as? RPCError) == RPCError(code: .permissionDenied, message: "not yours") }
        // An OutageState with no fields is not a MetadataEntry: its required key is missing.
        await #expect { try await connection.unary(Self.echo, request: OutageState(), response: MetadataEntry.self) }
          throws: { error in
            guard let error = error as? RPCError else { return false }
            return error.code == .invalidArgument && error.message.contains("pushline.rpc.MetadataEntry.key")
          }
        // The connection is still good.
        let after = try await connection.unary(Self.echo, request: MetadataEntry(key: "k"), response: MetadataEntry.self)
        #expect(after.key == "k")
      }
    }
  }

  @Test func aServerStreamDeliversEveryResponseInOrderThenEnds() async throws {
    try await Self.withServer { port in
      try await RPCClient.withConnection(host: "127.0.0.1", port: port) { connection in
        var request = MetadataEntry(key: "n")
        request.value = "2000"
        var keys: [String] = []
        for try await response in connection.serverStreaming(Self.count, request: request, response: MetadataEntry.self) {
          keys.append(response.key)
        }
        #expect(keys == (1...2000).map(String.init))
      }
    }
  }

  @Test func aFailingStreamDeliversWhatCameThenThrowsItsStatus() async throws {
    try await Self.withServer { port in
      try await RPCClient.withConnection(host: "127.0.0.1", port: port) { connection in
        var keys: [String] = []
        await #expect {
          for try await response in connection.serverStreaming(Self.countThenFail, request: MetadataEntry(key: "n"), response: MetadataEntry.self) {
            keys.append(response.key)
          }
        } throws: { ($0 as? RPCError) == RPCError(code: .dataLoss, message: "lost the rest") }
        #expect(keys == ["1"])
      }
    }
  }

  @Test func abandoningAStreamCancelsTheCallOnTheServer() async throws {
    let (hangs, report) = AsyncStream<String>.makeStream()
    try await Self.withServer(hangs: report) { port in
      try await RPCClient.withConnection(host: "127.0.0.1", port: port) { connection in
        var events = hangs.makeAsyncIterator()
        let consumer = Task {
          for try await _ in connection.serverStreaming(Self.hangStream, request: MetadataEntry(key: "s"), response: MetadataEntry.self) {}
        }
        #expect(await events.next() == "started s")
        consumer.cancel()
        #expect(await events.next() == "cancelled s")
        _ = await consumer.result
      }
    }
  }

  @Test func manyConcurrentCallsShareOneConnection() async throws {
    try await Self.withServer { port in
      try await RPCClient.withConnection(host: "127.0.0.1", port: port) { connection in
        try await expectConcurrentUppercasingCalls(Self.echo, on: connection)
      }
    }
  }

  @Test func cancellingTheCallerCancelsTheHandler() async throws {
    let (hangs, report) = AsyncStream<String>.makeStream()
    try await Self.withServer(hangs: report) { port in
      try await RPCClient.withConnection(host: "127.0.0.1", port: port) { connection in
        let call = Task { try await connection.unary(Self.hang, request: MetadataEntry(key: "h"), response: MetadataEntry.self) }
        var events = hangs.makeAsyncIterator()
        #expect(await events.next() == "started h")
        call.cancel()
        await #expect { try await call.value } throws: { ($0 as? RPCError)?.code == .cancelled }
        #expect(await events.next() == "cancelled h")
      }
    }
  }

  /// A call past its deadline ends DEADLINE_EXCEEDED and its handler is cancelled on the
  /// server (the test waits for both events, not for the time).
  @Test func aCallPastItsDeadlineEndsAndItsHandlerStops() async throws {
    let (hangs, report) = AsyncStream<String>.makeStream()
    try await Self.withServer(hangs: report) { port in
      try await RPCClient.withConnection(host: "127.0.0.1", port: port) { connection in
        await #expect {
          try await connection.unary(Self.hang, request: MetadataEntry(key: "d"), response: MetadataEntry.self, timeout: .milliseconds(100))
        } throws: { ($0 as? RPCError)?.code == .deadlineExceeded }
        var events = hangs.makeAsyncIterator()
        #expect(await events.next() == "started d")
        #expect(await events.next() == "cancelled d")
        // The connection keeps serving.
        let after = try await connection.unary(Self.echo, request: MetadataEntry(key: "k"), response: MetadataEntry.self, timeout: .seconds(30))
        #expect(after.key == "k")
      }
    }
  }

  @Test func aCallCancelledBeforeItStartsNeverReachesTheServer() async throws {
    try await Self.withServer { port in
      try await RPCClient.withConnection(host: "127.0.0.1", port: port) { connection in
        let call = Task {
          withUnsafeCurrentTask { $0?.cancel() }
          return try await connection.unary(Self.hang, request: MetadataEntry(key: "h"), response: MetadataEntry.self)
        }
        await #expect { try await call.value } throws: { ($0 as? RPCError)?.code == .cancelled }
      }
    }
  }

  /// A peer sending garbage is answered with a GOAWAY and cut off; a well-behaved client on
  /// the same server keeps being served.
  @Test func aMisbehavingPeerIsCutOffWhileOthersAreServed() async throws {
    try await Self.withServer { port in
      try await RPCClient.withConnection(host: "127.0.0.1", port: port) { connection in
        let received = try await RawPeer.send(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8), to: port)
        #expect(received.getBytes(at: 0, length: 8) == Array("PUSHLINE".utf8))
        #expect(received.getInteger(at: ConnectionPreface.size + 3, as: UInt8.self) == FrameKind.goAway.rawValue)
        let still = try await connection.unary(Self.echo, request: MetadataEntry(key: "still"), response: MetadataEntry.self)
        #expect(still.key == "still")
      }
    }
  }

  /// A server closing a connection with a GOAWAY closes its output and reads on: a socket
  /// closed with bytes unread answers with a reset, which can destroy the GOAWAY on its way
  /// over a real network (and the retry hint of a connection refused past the accept rate,
  /// whose client goes on sending the calls it started with its handshake).
  @Test func aServerClosingWithAGoAwayReadsWhatThePeerStillSendsRatherThanResetIt() async throws {
    try await Self.withServer { port in
      try await NIOThreadPool.singleton.runIfActive {  // blocking socket calls, off the tasks' threads
        let socket = try BlockingSocket(port: port)
        try socket.send(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        let answer = try RawPeer.elements(in: ByteBuffer(bytes: try socket.receiveUntilEndOfStream()))
        guard case .frame(let frame)? = answer.last, frame.kind == .goAway else {
          Issue.record("expected a GOAWAY, then the end of the stream; got \(answer)")
          return
        }
        // Closed with its peer's bytes unread, the server's socket would reset the connection,
        // and the second send would fail.
        for _ in 0..<3 { try socket.send(Array(repeating: 0, count: 4096)) }
      }
    }
  }

  /// A client may send its calls and shut its side of the connection down at once (a script's
  /// `printf … | nc`): the end of file may then arrive in the same read as the calls. The
  /// unary calls it finished are still answered, and the server closes once they have ended;
  /// a call it had not finished is dropped. (Streams end at once: `PumpedStreamTests`.)
  @Test func aClientThatShutsItsSideDownAfterItsCallsGetsTheirAnswers() async throws {
    try await Self.withServer { port in
      try await NIOThreadPool.singleton.runIfActive {  // blocking socket calls, off the tasks' threads
        func call(_ callID: UInt32, _ method: String, _ value: String, halfClosed: Bool = true) -> [UInt8] {
          let start = Frame(kind: .callStart, callID: callID, payload: CallStart(method: method).serializedBytes())
          let message = Frame(kind: .message, callID: callID, payload: [0] + { var entry = MetadataEntry(key: "k\(callID)"); entry.value = value; return entry }().serializedBytes())
          return start.bytes + message.bytes + (halfClosed ? Frame(kind: .halfClose, callID: callID, payload: []).bytes : [])
        }
        let socket = try BlockingSocket(port: port)
        try socket.send(RawPeer.opening + call(1, Self.echo, "one") + call(3, Self.echo, "two") + call(5, Self.echo, "never", halfClosed: false))
        try socket.shutDownSending()
        let answers = try RawPeer.elements(in: ByteBuffer(bytes: try socket.receiveUntilEndOfStream()))
        var messages: [UInt32: [String]] = [:]
        var statuses: [UInt32: UInt32] = [:]
        for case .frame(let frame) in answers {
          switch frame.kind {
          case .message: messages[frame.callID, default: []].append(try MetadataEntry(serializedBytes: Array(frame.payload.dropFirst())).key)
          case .status: statuses[frame.callID] = try CallStatus(serializedBytes: frame.payload).code
          default: #expect(frame.kind == .handshake, "no GOAWAY: the client takes no new call anyway")
          }
        }
        #expect(messages == [1: ["k1"], 3: ["k3"]])
        #expect(statuses == [1: StatusCode.ok.rawValue, 3: StatusCode.ok.rawValue])
      }
    }
  }

  /// A client that shuts its side down after its calls have ended, while their answers still
  /// wait in the server's channel (it reads slowly), gets every byte of them before the close.
  @Test func answersStillWaitingWhenTheClientShutsItsSideDownAreAllSent() async throws {
    let (events, report) = AsyncStream<String>.makeStream()
    try await Self.withServer(hangs: report) { port in
      let (calls, size) = (8, 3_000_000)
      let socket = try BlockingSocket(port: port)
      let requests = (0..<calls).flatMap { index in
        let callID = UInt32(2 * index + 1)
        var request = MetadataEntry(key: "k\(callID)")
        request.value = "\(size)"
        return [
          Frame(kind: .callStart, callID: callID, payload: CallStart(method: Self.big).serializedBytes()),
          Frame(kind: .message, callID: callID, payload: [0] + request.serializedBytes()), Frame(kind: .halfClose, callID: callID),
        ].flatMap(\.bytes)
      }
      try socket.send(RawPeer.opening + requests)
      var answered = events.makeAsyncIterator()
      for _ in 0..<calls { _ = await answered.next() }  // every call has ended: its answer was written on the loop
      try socket.shutDownSending()
      let received = try await NIOThreadPool.singleton.runIfActive { try socket.receiveUntilEndOfStream() }
      var sizes: [UInt32: Int] = [:]
      var statuses: [UInt32: UInt32] = [:]
      for case .frame(let frame) in try RawPeer.elements(in: ByteBuffer(bytes: received)) {
        if frame.kind == .message { sizes[frame.callID, default: 0] += frame.payload.count }
        if frame.kind == .status { statuses[frame.callID] = try CallStatus(serializedBytes: frame.payload).code }
      }
      #expect(statuses.count == calls && statuses.values.allSatisfy { $0 == StatusCode.ok.rawValue })
      #expect(sizes.count == calls && sizes.values.allSatisfy { $0 > size })
    }
  }

  /// A peer that sends half a frame and goes silent is closed by the server's idle timeout
  /// (the test waits for the server's EOF, not for a time).
  @Test func halfAFrameThenSilenceIsCutOffByTheIdleTimeout() async throws {
    try await Self.withServer(idleTimeout: .seconds(2)) { port in
      let received = try await RawPeer.send(ConnectionPreface().bytes + [0x00, 0x00, 0x10, 0x00], to: port)
      let frame = try #require(received.getBytes(at: 0, length: received.readableBytes))
      #expect(frame[3] == FrameKind.goAway.rawValue)
      let goAway = try GoAway(serializedBytes: Array(frame.dropFirst(FrameHeader.size)))
      #expect(goAway.message?.hasPrefix("idle") == true)
    }
  }

  @Test func anUnreachableServerIsUnavailable() async throws {
    var port = 0
    try await Self.withServer { port = $0 }  // The port is free again once the server stops.
    await #expect {
      try await RPCClient.withConnection(host: "127.0.0.1", port: port) { _ in }
    } throws: { ($0 as? RPCError)?.code == .unavailable }
  }
}
