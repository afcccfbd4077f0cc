import PushlineWire
import Testing

@Suite("UnknownFields")
struct UnknownFieldsTests {
  @Test func anUnknownEnumValueIsAppendedAsAVarintField() {
    var fields = UnknownFields()
    fields.appendVarint(9, fieldNumber: 5)
    fields.appendVarint(UInt64(bitPattern: -1), fieldNumber: 300)
    #expect(fields.bytes == [0x28, 0x09, 0xE0, 0x12] + [UInt8](repeating: 0xFF, count: 9) + [0x01])
  }

  @Test func writingEmitsTheBytesVerbatim() {
    let fields = UnknownFields(bytes: [0xA0, 0x06, 0x07])
    let written = [UInt8](unsafeUninitializedCapacity: fields.encodedSize) { buffer, count in
      var writer = WireWriter(UnsafeMutableRawBufferPointer(buffer))
      fields.write(to: &writer)
      count = fields.encodedSize
    }
    #expect(written == fields.bytes)
  }
}
