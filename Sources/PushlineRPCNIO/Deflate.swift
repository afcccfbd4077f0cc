import CZlib
import PushlineRPC

/// Per-message compression with zlib's deflate (RFC 1950 streams), as negotiated in the
/// handshake.
///
/// Decompression is bounded: it inflates in chunks and stops as soon as the output would pass
/// `limit` (the connection's maximum message size), so a small compressed message cannot
/// expand into gigabytes (a decompression bomb).
enum Deflate {
  /// Messages smaller than this are sent uncompressed: deflate would save too little.
  static let threshold = 1_024

  /// A message as it goes on the wire: deflated when the connection agreed on deflate
  /// (`negotiated`) and the message reaches the threshold, as is otherwise.
  static func prepare(_ message: [UInt8], negotiated: Bool) -> (bytes: [UInt8], compressed: Bool) {
    negotiated && message.count >= threshold ? (compress(message), true) : (message, false)
  }

  /// The bytes, deflated.
  static func compress(_ bytes: [UInt8]) -> [UInt8] {
    var size = compressBound(uLong(bytes.count))
    var output = [UInt8](repeating: 0, count: Int(size))
    let status = output.withUnsafeMutableBufferPointer { out in
      bytes.withUnsafeBufferPointer { input in
        compress2(out.baseAddress, &size, input.baseAddress, uLong(input.count), Z_DEFAULT_COMPRESSION)
      }
    }
    precondition(status == Z_OK, "compress2 cannot fail with a compressBound-sized buffer")
    output.removeSubrange(Int(size)...)
    return output
  }

  /// The bytes, inflated.
  ///
  /// - Throws: ``RPCError`` RESOURCE_EXHAUSTED when the output would exceed `limit`, INTERNAL
  ///   when the input is not a complete deflate stream.
  static func decompress(_ bytes: [UInt8], limit: Int) throws(RPCError) -> [UInt8] {
    try decompress(bytes[...], limit: limit)
  }

  /// The same, for part of an array (a message read as the payload of its frame).
  static func decompress(_ bytes: ArraySlice<UInt8>, limit: Int) throws(RPCError) -> [UInt8] {
    var stream = z_stream()
    guard inflateInit_(&stream, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
      throw RPCError(code: .internal, message: "zlib cannot start inflating")
    }
    defer { inflateEnd(&stream) }
    enum Outcome { case complete, tooLarge, malformed }
    var output: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: min(max(bytes.count * 4, 4_096), 256 << 10, limit + 1))
    let outcome = bytes.withUnsafeBufferPointer { input -> Outcome in
      stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
      stream.avail_in = uInt(input.count)
      while true {
        let (status, produced) = chunk.withUnsafeMutableBufferPointer { buffer -> (Int32, Int) in
          stream.next_out = buffer.baseAddress
          stream.avail_out = uInt(buffer.count)
          let status = inflate(&stream, Z_NO_FLUSH)
          return (status, buffer.count - Int(stream.avail_out))
        }
        guard status == Z_OK || status == Z_STREAM_END else { return .malformed }
        output.append(contentsOf: chunk[..<produced])
        if output.count > limit { return .tooLarge }
        if status == Z_STREAM_END { return stream.avail_in == 0 ? .complete : .malformed }
        if produced == 0 && stream.avail_in == 0 { return .malformed }  // A truncated stream.
      }
    }
    switch outcome {
    case .complete:
      return output
    case .tooLarge:
      throw RPCError(code: .resourceExhausted, message: "a compressed message inflates past the limit of \(limit) bytes")
    case .malformed:
      throw RPCError(code: .internal, message: "a compressed message is not a valid deflate stream")
    }
  }
}
