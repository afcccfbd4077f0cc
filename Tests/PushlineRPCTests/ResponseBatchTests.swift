import PushlineRPC
import PushlineSchema
import PushlineWire
import Testing

@Suite("Response batches: a stream's responses encoded straight into their frames")
struct ResponseBatchTests {
  static func entry(_ key: String, valueBytes: Int = 0) -> MetadataEntry {
    var entry = MetadataEntry(key: key)
    if valueBytes > 0 { entry.value = String(repeating: "v", count: valueBytes) }
    return entry
  }

  /// A response is its MESSAGE frame, appended after the bytes already there, which the batch
  /// takes over.
  @Test func aResponseIsItsMessageFrameAfterTheBytesBefore() {
    var pending = Frame(kind: .status, callID: 1, payload: [8, 0]).bytes
    let before = pending
    var batch = ResponseBatch(callID: 3, maxFrameSize: 1 << 20, maxMessageSize: 4 << 20, compression: nil, appendingTo: &pending)
    #expect(pending.isEmpty)
    let first = Self.entry("a"), second = Self.entry("b", valueBytes: 300)
    batch.append(first)
    batch.append(serialized: second.serializedBytes())
    let expected: [Frame] = [
      Frame(kind: .message, callID: 3, payload: [0] + first.serializedBytes()),
      Frame(kind: .message, callID: 3, payload: [0] + second.serializedBytes()),
    ]
    #expect(batch.frames == before + expected.flatMap(\.bytes))
    #expect(!batch.endsStream)
    batch.endStream()
    #expect(batch.endsStream)
  }

  /// A response longer than the peer's frames is split as ``MessageFraming`` splits it,
  /// whichever way it is appended.
  @Test func aResponseLongerThanAFrameIsSplit() {
    let entry = Self.entry("long", valueBytes: 100)
    let expected = MessageFraming.frames(for: entry.serializedBytes(), compressed: false, callID: 5, maxFrameSize: 32).flatMap(\.bytes)
    for appendsSerialized in [false, true] {
      var empty: [UInt8] = []
      var batch = ResponseBatch(callID: 5, maxFrameSize: 32, maxMessageSize: 4 << 20, compression: nil, appendingTo: &empty)
      if appendsSerialized { batch.append(serialized: entry.serializedBytes()) } else { batch.append(entry) }
      #expect(batch.frames == expected)
      let frames = ConnectionElement.encodedFrames(batch.frames).frames
      #expect(frames.count > 1 && frames.allSatisfy { $0.payload.count <= 32 })
    }
  }

  /// On a connection that agreed on compression, responses from the threshold up are
  /// compressed and flagged; smaller ones are not.
  @Test func responsesFromTheThresholdAreCompressed() {
    let compression = ResponseBatch.Compression(threshold: 64) { Array($0.reversed()) }
    let small = Self.entry("s"), large = Self.entry("l", valueBytes: 100)
    var empty: [UInt8] = []
    var batch = ResponseBatch(callID: 7, maxFrameSize: 1 << 20, maxMessageSize: 4 << 20, compression: compression, appendingTo: &empty)
    batch.append(small)
    batch.append(large)
    #expect(ConnectionElement.encodedFrames(batch.frames).frames == [
      Frame(kind: .message, callID: 7, payload: [0] + small.serializedBytes()),
      Frame(kind: .message, callID: 7, payload: [1] + large.serializedBytes().reversed()),
    ])
  }
}
