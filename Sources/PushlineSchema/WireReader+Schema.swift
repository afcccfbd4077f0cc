public import PushlineWire

extension WireReader {
  /// Reads an occurrence of an optional sub-message, merging it into the present value in
  /// place (no copy of the message).
  @inlinable
  mutating func readMessage<M: WireMessage>(into message: inout M?) throws(WireDecodingError) {
    if message == nil { message = M() }
    try readMessage(into: &message!)
  }

  /// Reads an occurrence of a repeated sub-message and appends it.
  @inlinable
  mutating func readMessage<M: WireMessage>(appendingTo messages: inout [M]) throws(WireDecodingError) {
    var value = M()
    try readMessage(into: &value)
    messages.append(value)
  }

  /// Reads a closed-enum value; a number the enum does not define goes to `unknownFields`
  /// and yields `nil`, so the field keeps its previous value (or stays unset).
  @inlinable
  mutating func readEnum<E: ProtoEnum>(_: E.Type, fieldNumber: Int, unknownFields: inout UnknownFields)
    throws(WireDecodingError) -> E?
  {
    let raw = try readVarint()
    if let known = E(rawValue: Int32(truncatingIfNeeded: raw)) { return known }
    unknownFields.appendVarint(raw, fieldNumber: fieldNumber)
    return nil
  }

  /// Reads a repeated closed enum, packed (`LEN`) or not (`VARINT`) whatever the schema
  /// declares, as parsers must; undefined numbers go to `unknownFields` one varint each.
  @inlinable
  mutating func readEnums<E: ProtoEnum>(appendingTo values: inout [E], packed: Bool, fieldNumber: Int, unknownFields: inout UnknownFields)
    throws(WireDecodingError)
  {
    if packed {
      try readPackedVarints { raw in
        Self.append(raw, to: &values, fieldNumber: fieldNumber, unknownFields: &unknownFields)
      }
    } else {
      Self.append(try readVarint(), to: &values, fieldNumber: fieldNumber, unknownFields: &unknownFields)
    }
  }

  @inlinable
  static func append<E: ProtoEnum>(_ raw: UInt64, to values: inout [E], fieldNumber: Int, unknownFields: inout UnknownFields) {
    if let known = E(rawValue: Int32(truncatingIfNeeded: raw)) {
      values.append(known)
    } else {
      unknownFields.appendVarint(raw, fieldNumber: fieldNumber)
    }
  }
}
