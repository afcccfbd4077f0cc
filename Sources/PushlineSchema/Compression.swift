/// Per-message compression, negotiated in the handshake (`pushline.rpc.Compression`).
public enum Compression: Int32, ProtoEnum {
  /// No compression.
  case identity = 0
  /// zlib's deflate (an RFC 1950 stream: header, deflate data, checksum).
  case deflate = 1

  public static let protoName = "pushline.rpc.Compression"

  public var name: String {
    switch self {
    case .identity: "IDENTITY"
    case .deflate: "DEFLATE"
    }
  }
}
