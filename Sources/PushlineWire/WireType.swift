/// The six wire types of the protobuf binary format: how the bytes after a tag are delimited.
///
/// Wire types 6 and 7 are not assigned; a tag that names them is a decoding error.
public enum WireType: UInt8, Sendable, Hashable, CaseIterable {
  /// A base-128 varint: int32, int64, uint32, uint64, sint32, sint64, bool, enum.
  case varint = 0
  /// Eight little-endian bytes: fixed64, sfixed64, double.
  case fixed64 = 1
  /// A varint length, then that many bytes: string, bytes, sub-messages, packed repeated fields.
  case lengthDelimited = 2
  /// The start of a proto2 group (deprecated, but still preserved when unknown).
  case startGroup = 3
  /// The end of a proto2 group.
  case endGroup = 4
  /// Four little-endian bytes: fixed32, sfixed32, float.
  case fixed32 = 5
}

extension WireType: CustomStringConvertible {
  /// The wire type's name as protobuf's encoding guide spells it.
  public var description: String {
    switch self {
    case .varint: "VARINT"
    case .fixed64: "I64"
    case .lengthDelimited: "LEN"
    case .startGroup: "SGROUP"
    case .endGroup: "EGROUP"
    case .fixed32: "I32"
    }
  }
}
