import PushlineRPC
import PushlineSchema
import PushlineWire
import Testing

/// The example bytes in docs/PROTOCOL.md section 2.4, so that the document cannot drift from
/// the implementation.
@Suite("docs/PROTOCOL.md examples")
struct ProtocolDocumentTests {
  @Test func pingAndPong() {
    let ping = Frame(kind: .ping, callID: 0, payload: [1, 2, 3, 4, 5, 6, 7, 8])
    #expect(ping.bytes == [0x00, 0x00, 0x08, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 1, 2, 3, 4, 5, 6, 7, 8])
    let pong = Frame(kind: .pong, callID: 0, payload: ping.payload)
    #expect(pong.bytes == [0x00, 0x00, 0x08, 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 1, 2, 3, 4, 5, 6, 7, 8])
  }

  @Test func callStartForHealthCheck() {
    let frame = Frame(kind: .callStart, callID: 1, payload: CallStart(method: "/pushline.Health/Check").serializedBytes())
    #expect(frame.bytes == [0x00, 0x00, 0x18, 0x01, 0x00, 0x00, 0x00, 0x00, 0x01, 0x0A, 0x16] + Array("/pushline.Health/Check".utf8))
  }
}
