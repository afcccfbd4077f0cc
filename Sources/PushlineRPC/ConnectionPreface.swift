/// The ten bytes each peer sends first on a connection: the ASCII magic `PUSHLINE`, then the
/// highest protocol version it speaks as a big-endian 16-bit number.
///
/// A peer that reads anything else closes the connection: it is not talking to Pushline.
public struct ConnectionPreface: Hashable, Sendable {
  /// `PUSHLINE` in ASCII.
  public static let magic: [UInt8] = Array("PUSHLINE".utf8)
  /// The preface's size on the wire.
  public static let size = 10
  /// The protocol version this implementation speaks.
  public static let currentVersion: UInt16 = 1

  /// The highest protocol version the sender speaks.
  public var version: UInt16

  /// A preface announcing `version`.
  public init(version: UInt16 = ConnectionPreface.currentVersion) { self.version = version }

  /// Parses the first ten bytes of `bytes`, which must hold at least that many.
  ///
  /// - Throws: ``ProtocolViolation`` when the magic is wrong.
  public init(parsing bytes: UnsafeRawBufferPointer) throws(ProtocolViolation) {
    precondition(bytes.count >= Self.size, "a preface is ten bytes")
    guard bytes.prefix(Self.magic.count).elementsEqual(Self.magic) else {
      throw ProtocolViolation(.badPreface, "the connection does not start with PUSHLINE")
    }
    version = UInt16(bytes[8]) << 8 | UInt16(bytes[9])
  }

  /// The preface's ten bytes.
  public var bytes: [UInt8] { Self.magic + [UInt8(version >> 8), UInt8(truncatingIfNeeded: version)] }
}
