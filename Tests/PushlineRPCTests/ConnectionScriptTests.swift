import PushlineTesting
import Testing
import PushlineRPCTesting

/// The connection state machines under random scripts of peer frames and own-side actions
/// (``ConnectionScript``, which the `FuzzConnection` fuzzer also runs): no trap, and no write
/// asked for after the server's machine has said to close. The fuzzer explores far more; this
/// keeps what it established from regressing, in every test run.
@Suite("Connection state machines under random scripts")
struct ConnectionScriptTests {
  @Test(arguments: 0..<4)
  func randomScriptsBreakNoRule(seed: Int) {
    var random = SplitMix64(seed: UInt64(seed) &* 0x2545_F491_4F6C_DD1D &+ 7)
    for _ in 0..<5_000 {
      let script = (0..<Int(random.next() % 160)).map { _ in
        // Small values most of the time, so that the scripts mostly pick operations and calls.
        UInt8(truncatingIfNeeded: random.next() % 4 == 0 ? random.next() : random.next() % 16)
      }
      let broken = script.withUnsafeBytes { ConnectionScript.run($0) }
      #expect(broken == nil, "seed \(seed), script \(script)")
      if broken != nil { return }
    }
  }
}
