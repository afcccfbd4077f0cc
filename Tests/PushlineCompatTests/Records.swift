import Foundation

/// The record formats `tools/compat/README.md` specifies, little-endian throughout.
enum Records {
  /// A message tagged with its type: `u16 nameLength, name, u32 length, bytes`.
  struct Named {
    var name: String
    var bytes: [UInt8]
  }

  /// The harness's answer to one named record: `u8 status, u32 length, bytes`.
  struct Result {
    var unpacked: Bool
    var bytes: [UInt8]
  }

  static func encode(_ records: [Named], json: [String]? = nil) -> Data {
    var data = Data()
    for (index, record) in records.enumerated() {
      appendLength(UInt16(record.name.utf8.count), to: &data)
      data.append(contentsOf: record.name.utf8)
      appendLength(UInt32(record.bytes.count), to: &data)
      data.append(contentsOf: record.bytes)
      if let json {
        appendLength(UInt32(json[index].utf8.count), to: &data)
        data.append(contentsOf: json[index].utf8)
      }
    }
    return data
  }

  static func decodeNamed(_ data: Data) throws -> [Named] {
    var reader = ByteReader(bytes: [UInt8](data))
    var records: [Named] = []
    while !reader.isAtEnd {
      let name = String(decoding: try reader.take(Int(try reader.integer(UInt16.self))), as: UTF8.self)
      records.append(Named(name: name, bytes: try reader.take(Int(try reader.integer(UInt32.self)))))
    }
    return records
  }

  static func decodeResults(_ data: Data) throws -> [Result] {
    var reader = ByteReader(bytes: [UInt8](data))
    var results: [Result] = []
    while !reader.isAtEnd {
      let status = try reader.integer(UInt8.self)
      results.append(Result(unpacked: status == 0, bytes: try reader.take(Int(try reader.integer(UInt32.self)))))
    }
    return results
  }

  private static func appendLength<T: FixedWidthInteger>(_ value: T, to data: inout Data) {
    withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) }
  }

  struct ByteReader {
    var bytes: [UInt8]
    var offset = 0
    var isAtEnd: Bool { offset >= bytes.count }

    mutating func take(_ count: Int) throws -> [UInt8] {
      guard bytes.count - offset >= count else { throw PeerHarness.HarnessError(message: "record truncated at \(offset)") }
      defer { offset += count }
      return Array(bytes[offset..<offset + count])
    }

    mutating func integer<T: FixedWidthInteger>(_: T.Type) throws -> T {
      try take(MemoryLayout<T>.size).reversed().reduce(T(0)) { $0 << 8 | T($1) }
    }
  }
}
