import PushlineWire

/// Renders raw unknown fields: field number, wire type and value, groups nested.
enum UnknownFieldsDump {
  static func write(_ bytes: [UInt8], indent: String, to output: inout String) {
    guard !bytes.isEmpty else { return }
    bytes.withUnsafeBytes { buffer in
      var reader = WireReader(buffer, maxDepth: DecodingOptions().maxDepth)
      do {
        try writeFields(&reader, closingGroup: nil, indent: indent, to: &output)
      } catch {
        // Unknown fields were validated when the message was decoded; this cannot happen
        // for bytes that came from the decoder, but say so rather than hide it.
        output += "\(indent)# unreadable unknown fields: \(error)\n"
      }
    }
  }

  private static func writeFields(_ reader: inout WireReader, closingGroup: UInt32?, indent: String, to output: inout String)
    throws(WireDecodingError)
  {
    while !reader.isAtEnd {
      let tag = try reader.readTag()
      let number = tag >> 3
      guard let wireType = WireType(rawValue: UInt8(tag & 7)) else {
        throw WireDecodingError(.invalidWireType, at: reader.offset)
      }
      let prefix = "\(indent)\(number): \(wireType)"
      switch wireType {
      case .varint:
        let value = try reader.readVarint()
        output += "\(prefix) \(value)" + (value >> 63 == 1 ? " (\(Int64(bitPattern: value)))" : "") + "    # unknown\n"
      case .fixed64:
        let value = try reader.readFixed64()
        output += "\(prefix) 0x\(Hex.encode(withUnsafeBytes(of: value.bigEndian, Array.init))) (\(Double(bitPattern: value)))    # unknown\n"
      case .fixed32:
        let value = try reader.readFixed32()
        output += "\(prefix) 0x\(Hex.encode(withUnsafeBytes(of: value.bigEndian, Array.init))) (\(Float(bitPattern: value)))    # unknown\n"
      case .lengthDelimited:
        let bytes = try reader.readBytes()
        let text = String(validating: bytes, as: UTF8.self).map { " " + ProtoJSON.quoted($0) } ?? ""
        output += "\(prefix) <\(bytes.count) bytes> \(Hex.encode(bytes, separator: " "))\(text)    # unknown\n"
      case .startGroup:
        output += "\(prefix) {    # unknown group\n"
        try writeFields(&reader, closingGroup: number, indent: indent + "  ", to: &output)
        output += "\(indent)}\n"
      case .endGroup:
        guard closingGroup == number else { throw WireDecodingError(.unmatchedGroup, at: reader.offset) }
        return
      }
    }
  }
}
