import PushlineRPC
import Testing

@testable import PushlineRPCNIO

@Suite("Deflate")
struct DeflateTests {
  @Test func roundTripsAndShrinksRepetitiveMessages() throws {
    let message = Array(String(repeating: "earnings/last-trip $18.42 ", count: 400).utf8)
    let compressed = Deflate.compress(message)
    #expect(compressed.count < message.count / 10)
    #expect(try Deflate.decompress(compressed, limit: message.count) == message)
  }

  @Test func roundTripsIncompressibleAndEmptyInput() throws {
    var generator = SystemRandomNumberGenerator()
    let noise = (0..<100_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
    #expect(try Deflate.decompress(Deflate.compress(noise), limit: noise.count) == noise)
    #expect(try Deflate.decompress(Deflate.compress([]), limit: 0) == [])
  }

  /// 64 MiB of zeros deflate to about 64 KiB; inflating stops at the limit, long before 64 MiB.
  @Test func aDecompressionBombStopsAtTheLimit() {
    let bomb = Deflate.compress([UInt8](repeating: 0, count: 64 << 20))
    #expect(bomb.count < 100_000)
    #expect {
      try Deflate.decompress(bomb, limit: 4 << 20)
    } throws: { ($0 as? RPCError)?.code == .resourceExhausted }
  }

  @Test func aMessageExactlyAtTheLimitIsAccepted() throws {
    let message = [UInt8](repeating: 7, count: 10_000)
    #expect(try Deflate.decompress(Deflate.compress(message), limit: 10_000).count == 10_000)
    #expect(throws: RPCError.self) { try Deflate.decompress(Deflate.compress(message), limit: 9_999) }
  }

  @Test("malformed streams", arguments: [
    [UInt8](), [0x78], [0x00, 0x01, 0x02, 0x03], Array(Deflate.compress(Array(repeating: 1, count: 5_000)).dropLast(3)),
    Deflate.compress([1, 2, 3]) + [0xFF],
  ])
  func malformedStreamsAreInternalErrors(bytes: [UInt8]) {
    #expect {
      try Deflate.decompress(bytes, limit: 1 << 20)
    } throws: { ($0 as? RPCError)?.code == .internal }
  }
}
