import Foundation
import PushlineSchema
import PushlineText
import PushlineTesting
import PushlineWire
import Testing

/// protobuf-c is the reference peer: random messages cross between it and Pushline in both
/// directions, and must come back byte for byte.
@Suite("Compatibility with protobuf-c and Google protobuf", .serialized)
struct ProtobufCCompatTests {
  static let messagesPerType = 1_000
  /// A new seed every run (messages differ run to run); set PUSHLINE_COMPAT_SEED to replay one.
  static let seed: UInt64 = ProcessInfo.processInfo.environment["PUSHLINE_COMPAT_SEED"].flatMap { UInt64($0) }
    ?? UInt64.random(in: 0...UInt64(UInt32.max))

  /// Pushline's random corpus: every type, unknown fields included, no embedded NUL (which
  /// protobuf-c truncates, an expected divergence tested on its own).
  static let corpus: [(type: any ReflectableMessage.Type, message: any ReflectableMessage)] = {
    var random = RandomMessageGenerator(seed: seed)
    return MessageRegistry.all.flatMap { type in (0..<messagesPerType).map { _ in (type, random.message(of: type)) } }
  }()

  @Test func pushlineBytesDecodeInProtobufCToTheSameValues() async throws {
    let records = Self.corpus.map { Records.Named(name: $0.type.protoName, bytes: $0.message.serializedBytes()) }
    let results = try Records.decodeResults(try await PeerHarness.protobufC(["roundtrip"], input: Records.encode(records)))
    try #require(results.count == records.count)
    var mismatches = 0
    for (record, result) in zip(records, results) where !result.unpacked || result.bytes != record.bytes {
      mismatches += 1
      if mismatches <= 5 {
        Issue.record("seed \(Self.seed): \(record.name) \(result.unpacked ? "re-encoded differently" : "failed to unpack")\nours:       \(Hex.encode(record.bytes))\nprotobuf-c: \(Hex.encode(result.bytes))")
      }
    }
    #expect(mismatches == 0, "seed \(Self.seed)")
  }

  @Test func protobufCBytesDecodeInPushlineToTheSameValues() async throws {
    let records = try Records.decodeNamed(try await PeerHarness.protobufC(["generate", "\(Self.messagesPerType)", "\(Self.seed)"]))
    #expect(records.count == MessageRegistry.all.count * Self.messagesPerType)
    var mismatches = 0
    for record in records {
      let type = try #require(MessageRegistry.messageType(named: record.name))
      do {
        let decoded = try type.init(serializedBytes: record.bytes, options: DecodingOptions())
        if decoded.serializedBytes() != record.bytes {
          mismatches += 1
          if mismatches <= 5 {
            Issue.record("seed \(Self.seed): \(record.name) re-encoded differently\nprotobuf-c: \(Hex.encode(record.bytes))\nours:       \(Hex.encode(decoded.serializedBytes()))")
          }
        }
      } catch {
        mismatches += 1
        if mismatches <= 5 { Issue.record("seed \(Self.seed): \(record.name): \(error)\n\(Hex.encode(record.bytes))") }
      }
    }
    #expect(mismatches == 0, "seed \(Self.seed)")
  }

  /// Google's Python protobuf (upb) reads the same corpus — Pushline's random messages and
  /// protobuf-c's — re-encodes each to the same bytes, and maps it to the same JSON as Pushline.
  @Test func googleProtobufAgreesOnBytesAndJSON() async throws {
    var records = Self.corpus.map { Records.Named(name: $0.type.protoName, bytes: $0.message.serializedBytes()) }
    records += try Records.decodeNamed(try await PeerHarness.protobufC(["generate", "200", "\(Self.seed &+ 1)"]))
    let json = try records.map { record in
      let type = try #require(MessageRegistry.messageType(named: record.name))
      return ProtoJSON.encode(try type.init(serializedBytes: record.bytes, options: DecodingOptions()))
    }
    let check = try await PeerHarness.pythonCheck(corpus: Records.encode(records, json: json))
    #expect(check.passed, "seed \(Self.seed)\n\(check.report)")
  }

  /// The golden vectors without groups go through protobuf-c unchanged.
  @Test("golden vectors round-trip through protobuf-c", arguments: ["tracker-card-minimal", "tracker-card-full",
    "weekly-earnings-card", "dxgy-progress-card", "question", "answer-response-errors"])
  func goldenVectors(name: String) async throws {
    let hex = try String(contentsOf: PeerHarness.root.appendingPathComponent("Tests/PushlineSchemaTests/Fixtures/\(name).hex"), encoding: .utf8)
    let bytes = try #require(Hex.decode(hex.split(separator: "\n").map { $0.split(separator: "#", omittingEmptySubsequences: false)[0] }.joined(separator: " ")))
    let type = typeName(for: name)
    let results = try Records.decodeResults(try await PeerHarness.protobufC(["roundtrip"], input: Records.encode([Records.Named(name: type, bytes: bytes)])))
    #expect(results.first?.unpacked == true)
    #expect(results.first?.bytes == bytes)
  }

  private func typeName(for fixture: String) -> String {
    switch fixture {
    case "weekly-earnings-card": TrackerWeeklyEarningsCard.protoName
    case "dxgy-progress-card": TrackerDxGyProgressCard.protoName
    case "question": Question.protoName
    case "answer-response-errors": AnswerResponse.protoName
    default: TrackerCard.protoName
    }
  }
}
