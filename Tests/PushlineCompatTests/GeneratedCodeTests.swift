import Foundation
import Testing

/// The benchmark package commits protoc-c's output for proto/tracker.proto; it must be what
/// protoc-c generates from proto/ now (`tools/bench/regenerate.sh` refreshes it).
@Suite("Committed generated code")
struct GeneratedCodeTests {
  @Test("protoc-c output in tools/bench matches proto/", arguments: [
    ("tracker.pb-c.c", "tools/bench/Sources/ProtobufCPeer/tracker.pb-c.c"),
    ("tracker.pb-c.h", "tools/bench/Sources/ProtobufCPeer/include/tracker.pb-c.h"),
  ])
  func protobufCOutputIsCurrent(generated: String, committed: String) async throws {
    try await PeerHarness.offThePool { try PeerHarness.built.get() }
    let fresh = try String(contentsOf: PeerHarness.buildDirectory.appendingPathComponent("gen/\(generated)"), encoding: .utf8)
    let current = try String(contentsOf: PeerHarness.root.appendingPathComponent(committed), encoding: .utf8)
    #expect(fresh == current, "\(committed) is stale: run tools/bench/regenerate.sh")
  }
}
