import NIOCore
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import PushlineWire
import Synchronization
import Testing

/// A server stream fed by a ``ResponseSource`` that the transport pulls, over real sockets.
@Suite("Pumped streams over loopback TCP")
struct PumpedStreamTests {
  static let method = "/test.Pumped/Count"

  /// Hands out the numbers 1…`total` as `MetadataEntry`s, `batch` per pull, and says when the
  /// last has been taken.
  final class Numbers: ResponseSource {
    let total: Int, batch: Int
    let next = Mutex(1)
    let (taken, takenSignal) = AsyncStream<Void>.makeStream()

    init(total: Int, batch: Int) {
      self.total = total
      self.batch = batch
    }

    func nextResponses() -> [[UInt8]] {
      let numbers = next.withLock { next -> ClosedRange<Int>? in
        guard next <= total else { return nil }
        defer { next = min(next + batch, total + 1) }
        return next...min(next + batch - 1, total)
      }
      guard let numbers else { return [] }
      if numbers.upperBound == total { takenSignal.finish() }
      return numbers.map { MetadataEntry(key: "\($0)").serializedBytes() }
    }
  }

  /// Every message arrives once, in order, and the status follows the last — with the pump
  /// woken many times before its first pull.
  @Test func everyPulledResponseArrivesInOrderThenTheStatus() async throws {
    var router = RPCRouter()
    router.registerServerStreaming(Self.method, request: MetadataEntry.self, response: MetadataEntry.self) { request, writer, _ in
      let numbers = Numbers(total: Int(request.value ?? "0") ?? 0, batch: 100)
      let pump = try #require(writer.pump(from: numbers))
      for _ in 0..<10 { pump.wake() }
      for await _ in numbers.taken {}
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
}
