import PushlineWire
import Testing

@Suite("WireReader")
struct WireReaderTests {
  func read<T>(_ bytes: [UInt8], _ body: (inout WireReader) throws -> T) throws -> T {
    try bytes.withUnsafeBytes { buffer in
      var reader = WireReader(buffer, maxDepth: 100)
      return try body(&reader)
    }
  }

  @Test func varintsOfOneToTenBytes() throws {
    #expect(try read([0x00]) { try $0.readVarint() } == 0)
    #expect(try read([0xAC, 0x02]) { try $0.readVarint() } == 300)
    #expect(try read([UInt8](repeating: 0xFF, count: 9) + [0x01]) { try $0.readVarint() } == .max)
    #expect(try read([0x80, 0x80, 0x80, 0x00]) { try $0.readVarint() } == 0)
  }

  @Test func anElevenByteVarintIsMalformed() {
    #expect(throws: WireDecodingError(.malformedVarint, at: 0, detail: "more than 10 bytes")) {
      try read([UInt8](repeating: 0x80, count: 10) + [0x00]) { try $0.readVarint() }
    }
  }

  @Test func tagVectorsFromSwiftProtobuf() throws {
    // Test_Unknown_proto3: the largest field number is fine; 2^29 and a 6-byte tag are not.
    #expect(try read([0xF8, 0xFF, 0xFF, 0xFF, 0x0F]) { try $0.readTag() } == 0xFFFF_FFF8)
    #expect(throws: WireDecodingError.self) { try read([0x80, 0x80, 0x80, 0x80, 0x10]) { try $0.readTag() } }
    #expect(throws: WireDecodingError.self) { try read([0xF8, 0xFF, 0xFF, 0xFF, 0x7F]) { try $0.readTag() } }
    #expect(throws: WireDecodingError.self) { try read([0x80, 0x80, 0x80, 0x80, 0x80, 0x00]) { try $0.readTag() } }
  }

  @Test func fixedWidthValuesAreLittleEndian() throws {
    #expect(try read([1, 2, 3, 4]) { try $0.readFixed32() } == 0x0403_0201)
    #expect(try read([1, 2, 3, 4, 5, 6, 7, 8]) { try $0.readFixed64() } == 0x0807_0605_0403_0201)
    #expect(throws: WireDecodingError(.truncated, at: 0, detail: "fixed64")) {
      try read([1, 2, 3, 4, 5, 6, 7]) { try $0.readFixed64() }
    }
  }

  @Test func aLengthIsCheckedAgainstTheBytesLeftBeforeAnythingIsRead() {
    #expect(throws: WireDecodingError(.lengthOutOfRange, at: 0, detail: "length 2147483647, 1 bytes left")) {
      try read([0xFF, 0xFF, 0xFF, 0xFF, 0x07, 0x61]) { try $0.readBytes() }
    }
  }

  /// A string that is not UTF-8 is named at its first bad sequence, read or skipped: "aé"
  /// then 0xC3 0x28 (a lead byte whose continuation is missing) at offset 4.
  @Test func badUTF8IsNamedAtItsFirstBadSequence() {
    let bytes: [UInt8] = [0x05, 0x61, 0xC3, 0xA9, 0xC3, 0x28]
    #expect(throws: WireDecodingError(.invalidUTF8, at: 4)) { try read(bytes) { try $0.readString() } }
    #expect(throws: WireDecodingError(.invalidUTF8, at: 4)) { try read(bytes) { try $0.skipString() } }
  }

  @Test func skippingKeepsTheWholeUnknownFieldVerbatim() throws {
    let group: [UInt8] = [0x0B, 0x10, 0x01, 0x1A, 0x01, 0x61, 0x0C]  // 1: group { 2: 1, 3: "a" }
    let unknown = try read(group + [0x20]) { reader in
      var fields = UnknownFields()
      let tag = try reader.readTag()
      try reader.skipField(tag: tag, startingAt: 0, into: &fields)
      return fields
    }
    #expect(unknown.bytes == group)
  }
}
