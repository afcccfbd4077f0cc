import NIOCore
import NIOPosix
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import PushlineTesting
import PushlineWire
import Synchronization
import Testing

/// A server stream fed by a ``ResponseSource`` that the transport pulls, over real sockets.
@Suite("Pumped streams over loopback TCP")
struct PumpedStreamTests {
  static let method = "/test.Pumped/Count"

  /// Hands out the numbers 1…`total` as `MetadataEntry`s, `batch` per pull, then completes;
  /// or, with no total, nothing ever, until its call ends.
  final class Numbers: ResponseSource {
    let total: Int?, batch: Int
    let next = Mutex(1)
    let (ended, endedSignal) = AsyncStream<Void>.makeStream()

    init(total: Int?, batch: Int) {
      self.total = total
      self.batch = batch
    }

    func nextResponses(into responses: inout ResponseBatch) {
      guard let total else { return }
      let numbers = next.withLock { next -> ClosedRange<Int>? in
        guard next <= total else { return nil }
        defer { next = min(next + batch, total + 1) }
        return next...min(next + batch - 1, total)
      }
      guard let numbers else { return responses.endStream() }
      for number in numbers { responses.append(MetadataEntry(key: "\(number)")) }
    }

    func streamEnded() {
      endedSignal.finish()
    }
  }

  /// Every message arrives once, in order, and the status follows the last — with the pump
  /// woken many times before its first pull, and the handler gone from the start.
  @Test func everyPulledResponseArrivesInOrderThenTheStatus() async throws {
    var router = RPCRouter()
    router.registerServerStreaming(Self.method, request: MetadataEntry.self, response: MetadataEntry.self) { request, writer, _ in
      let numbers = Numbers(total: Int(request.value ?? "0") ?? 0, batch: 100)
      let pump = try #require(writer.pump(from: numbers))
      for _ in 0..<10 { pump.wake() }
    }
    try await RPCServer(router: router, configuration: .init(port: 0)).withRunningServer { address in
      try await RPCClient.withConnection(host: "127.0.0.1", port: address.port!) { connection in
        var request = MetadataEntry(key: "n")
        request.value = "20000"
        var received = 0
        for try await entry in connection.serverStreaming(Self.method, request: request, response: MetadataEntry.self) {
          received += 1
          #expect(entry.key == "\(received)")
        }
        #expect(received == 20_000)
      }
    }
  }

  /// Many streams of one connection, woken together and again while their loop's pump
  /// scheduler pulls them, each carried to its end: no pump's wake is lost in the batching.
  @Test(.timeLimit(.minutes(1))) func manyStreamsWokenTogetherAllComplete() async throws {
    var router = RPCRouter()
    router.registerServerStreaming(Self.method, request: MetadataEntry.self, response: MetadataEntry.self) { request, writer, _ in
      let numbers = Numbers(total: Int(request.value ?? "0") ?? 0, batch: 3)
      try #require(writer.pump(from: numbers)).wake()
    }
    try await RPCServer(router: router, configuration: .init(port: 0)).withRunningServer { address in
      try await RPCClient.withConnection(host: "127.0.0.1", port: address.port!) { connection in
        let counts = try await withThrowingTaskGroup(of: Int.self) { group in
          for _ in 0..<96 {
            group.addTask {
              var request = MetadataEntry(key: "n")
              request.value = "30"
              var received = 0
              for try await _ in connection.serverStreaming(Self.method, request: request, response: MetadataEntry.self) {
                received += 1
              }
              return received
            }
          }
          return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(counts == Array(repeating: 30, count: 96))
      }
    }
  }

  /// A stream that never ends by itself hears of its end when the client leaves, so that it
  /// can let go of what it holds (the broker's subscription).
  @Test(.timeLimit(.minutes(1))) func aSourceHearsOfItsEndWhenTheClientLeaves() async throws {
    let (sources, reportSource) = AsyncStream<Numbers>.makeStream()
    var router = RPCRouter()
    router.registerServerStreaming(Self.method, request: MetadataEntry.self, response: MetadataEntry.self) { _, writer, _ in
      let numbers = Numbers(total: nil, batch: 1)
      _ = try #require(writer.pump(from: numbers))
      reportSource.yield(numbers)
    }
    try await RPCServer(router: router, configuration: .init(port: 0)).withRunningServer { address in
      var sourceIterator = sources.makeAsyncIterator()
      try await RPCClient.withConnection(host: "127.0.0.1", port: address.port!) { connection in
        let stream = Task {
          for try await _ in connection.serverStreaming(Self.method, request: MetadataEntry(key: "n"), response: MetadataEntry.self) {}
        }
        let source = try #require(await sourceIterator.next())
        stream.cancel()  // the client cancels its call
        for await _ in source.ended {}
      }
      let source = try await RPCClient.withConnection(host: "127.0.0.1", port: address.port!) { connection in
        _ = Task {
          for try await _ in connection.serverStreaming(Self.method, request: MetadataEntry(key: "n"), response: MetadataEntry.self) {}
        }
        return try #require(await sourceIterator.next())
      }
      for await _ in source.ended {}  // the client left: its connection closed
    }
  }

  /// A client that shuts its side of the connection down — or dies, which the server cannot
  /// tell apart — does not leave its stream open, even one whose source would never end it:
  /// the stream ends at once with CANCELLED, its source hears of the end, and the server
  /// closes the connection (the test waits for the end of file, not for a time).
  @Test(.timeLimit(.minutes(1))) func aStreamEndsWhenItsClientShutsItsSideDown() async throws {
    let numbers = Numbers(total: nil, batch: 1)
    var router = RPCRouter()
    router.registerServerStreaming(Self.method, request: MetadataEntry.self, response: MetadataEntry.self) { _, writer, _ in
      _ = try #require(writer.pump(from: numbers))
    }
    try await RPCServer(router: router, configuration: .init(port: 0)).withRunningServer { address in
      try await NIOThreadPool.singleton.runIfActive {  // blocking socket calls, off the tasks' threads
        let socket = try BlockingSocket(port: address.port!)
        let call = [
          Frame(kind: .callStart, callID: 1, payload: CallStart(method: Self.method).serializedBytes()),
          Frame(kind: .message, callID: 1, payload: [0] + MetadataEntry(key: "go").serializedBytes()),
          Frame(kind: .halfClose, callID: 1),
        ]
        try socket.send(RawPeer.opening + call.flatMap(\.bytes))
        try socket.shutDownSending()
        let answers = try RawPeer.elements(in: ByteBuffer(bytes: try socket.receiveUntilEndOfStream()))
        guard case .frame(let last)? = answers.last, last.kind == .status, last.callID == 1 else {
          Issue.record("expected the stream's status, then the end of file; got \(answers)")
          return
        }
        #expect(try CallStatus(serializedBytes: last.payload).code == StatusCode.cancelled.rawValue)
      }
      for await _ in numbers.ended {}
    }
  }

  /// Hands out a 60 KiB response per pull, without end, and reports what it is told of its
  /// connection's writability.
  final class Flood: ResponseSource {
    let (told, tell) = AsyncStream<Bool>.makeStream()

    func nextResponses(into responses: inout ResponseBatch) {
      responses.append(MetadataEntry(key: String(repeating: "x", count: 60_000)))
    }

    func connectionWritabilityChanged(_ isWritable: Bool) {
      tell.yield(isWritable)
    }
  }

  /// A source hears that its connection takes bytes at the first pull, that it stopped once a
  /// client that reads nothing lets the socket fill, and that it takes them again once the
  /// client reads: the broker coalesces a subscriber's queue only in between.
  @Test(.timeLimit(.minutes(1))) func aSourceHearsWhenItsConnectionStopsAndResumesTakingBytes() async throws {
    let flood = Flood()
    var router = RPCRouter()
    router.registerServerStreaming(Self.method, request: MetadataEntry.self, response: MetadataEntry.self) { _, writer, _ in
      try #require(writer.pump(from: flood)).wake()
    }
    try await RPCServer(router: router, configuration: .init(port: 0)).withRunningServer { address in
      let client = try await RawPeer.connectReadingNothing(to: address.port!, calling: Self.method)
      var told = flood.told.makeAsyncIterator()
      #expect(await told.next() == true)
      #expect(await told.next() == false)
      try await client.setOption(.autoRead, value: true).get()  // what it reads goes nowhere
      #expect(await told.next() == true)
      try await client.close()
    }
  }
}
