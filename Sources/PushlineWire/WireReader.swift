/// Reads protobuf wire elements from contiguous memory, never past the current message.
///
/// A reader is a cursor over bytes the caller keeps alive for the duration of a decode. Every
/// read checks the current limit (the end of the enclosing sub-message) and throws a
/// ``WireDecodingError`` whose offset is counted from the start of the top-level input. No
/// read allocates more than the bytes it has already seen: a length is checked against the
/// bytes that remain before anything is built from it.
public struct WireReader: ~Copyable {
  @usableFromInline let base: UnsafeRawPointer
  @usableFromInline var position: Int
  @usableFromInline var limit: Int
  @usableFromInline var depthRemaining: Int

  /// Creates a reader over `buffer`, allowing `maxDepth` nested sub-messages and groups.
  public init(_ buffer: UnsafeRawBufferPointer, maxDepth: Int) {
    // An empty buffer may have no base address; it is never dereferenced then.
    base = buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 0x10)!
    position = 0
    limit = buffer.count
    depthRemaining = maxDepth
  }

  /// The offset of the next byte to read, from the start of the top-level input.
  @inlinable
  public var offset: Int { position }

  /// Whether the current message (or packed run) has been read to its end.
  @inlinable
  public var isAtEnd: Bool { position >= limit }

  /// How many more levels of sub-messages and groups the reader allows: a message kept
  /// encoded, and checked later on its own, is held to what its reader would have allowed.
  public var remainingDepth: Int { depthRemaining }

  // MARK: Varints and tags

  /// Reads a varint of up to ten bytes; an eleventh continuation byte is an error.
  @inlinable @inline(__always)
  public mutating func readVarint() throws(WireDecodingError) -> UInt64 {
    if position < limit {
      let byte = base.load(fromByteOffset: position, as: UInt8.self)
      if byte < 0x80 {
        position &+= 1
        return UInt64(byte)
      }
    }
    return try readVarintSlow()
  }

  @usableFromInline
  mutating func readVarintSlow() throws(WireDecodingError) -> UInt64 {
    let start = position
    var result: UInt64 = 0
    var shift: UInt64 = 0
    while true {
      guard position < limit else { throw WireDecodingError(.truncated, at: start, detail: "varint") }
      let byte = base.load(fromByteOffset: position, as: UInt8.self)
      position &+= 1
      result |= UInt64(byte & 0x7F) << shift
      if byte < 0x80 { return result }
      shift &+= 7
      if shift >= 70 { throw WireDecodingError(.malformedVarint, at: start, detail: "more than 10 bytes") }
    }
  }

  /// Reads a field tag: a varint of at most five bytes whose value fits in 32 bits, so the
  /// field number is below 2^29. Field number 0 and wire types 6–7 are rejected by
  /// ``skipField(tag:startingAt:into:)``, the only place a tag that no field claims arrives.
  @inlinable @inline(__always)
  public mutating func readTag() throws(WireDecodingError) -> UInt32 {
    if position < limit {
      let byte = base.load(fromByteOffset: position, as: UInt8.self)
      if byte < 0x80 {
        position &+= 1
        return UInt32(byte)
      }
    }
    return try readTagSlow()
  }

  @usableFromInline
  mutating func readTagSlow() throws(WireDecodingError) -> UInt32 {
    let start = position
    var result: UInt32 = 0
    for index in 0..<5 {
      guard position < limit else { throw WireDecodingError(.truncated, at: start, detail: "tag") }
      let byte = base.load(fromByteOffset: position, as: UInt8.self)
      position &+= 1
      if index == 4 {
        if byte >= 0x80 { throw WireDecodingError(.malformedVarint, at: start, detail: "tag longer than 5 bytes") }
        if byte > 0x0F { throw WireDecodingError(.invalidFieldNumber, at: start, detail: "field number 2^29 or above") }
      }
      result |= UInt32(byte & 0x7F) << UInt32(7 * index)
      if byte < 0x80 { return result }
    }
    return result  // Unreachable: the fifth byte always returns or throws.
  }

  // MARK: Scalars

  /// Reads a varint field as int32: the low 32 bits of the value, as protobuf specifies.
  @inlinable @inline(__always)
  public mutating func readInt32() throws(WireDecodingError) -> Int32 {
    Int32(truncatingIfNeeded: try readVarint())
  }

  /// Reads a varint field as uint32: the low 32 bits of the value.
  @inlinable @inline(__always)
  public mutating func readUInt32() throws(WireDecodingError) -> UInt32 {
    UInt32(truncatingIfNeeded: try readVarint())
  }

  /// Reads a varint field as int64.
  @inlinable @inline(__always)
  public mutating func readInt64() throws(WireDecodingError) -> Int64 {
    Int64(bitPattern: try readVarint())
  }

  /// Reads a zigzag-encoded sint64.
  @inlinable @inline(__always)
  public mutating func readSInt64() throws(WireDecodingError) -> Int64 {
    Varint.unZigZag(try readVarint())
  }

  /// Reads a bool: any non-zero varint is `true`.
  @inlinable @inline(__always)
  public mutating func readBool() throws(WireDecodingError) -> Bool {
    try readVarint() != 0
  }

  /// Reads four little-endian bytes.
  @inlinable @inline(__always)
  public mutating func readFixed32() throws(WireDecodingError) -> UInt32 {
    guard limit &- position >= 4 else { throw WireDecodingError(.truncated, at: position, detail: "fixed32") }
    let value = base.loadUnaligned(fromByteOffset: position, as: UInt32.self)
    position &+= 4
    return UInt32(littleEndian: value)
  }

  /// Reads eight little-endian bytes.
  @inlinable @inline(__always)
  public mutating func readFixed64() throws(WireDecodingError) -> UInt64 {
    guard limit &- position >= 8 else { throw WireDecodingError(.truncated, at: position, detail: "fixed64") }
    let value = base.loadUnaligned(fromByteOffset: position, as: UInt64.self)
    position &+= 8
    return UInt64(littleEndian: value)
  }

  /// Reads a double, bit-exact.
  @inlinable @inline(__always)
  public mutating func readDouble() throws(WireDecodingError) -> Double {
    Double(bitPattern: try readFixed64())
  }

  /// Reads a float, bit-exact.
  @inlinable @inline(__always)
  public mutating func readFloat() throws(WireDecodingError) -> Float {
    Float(bitPattern: try readFixed32())
  }

  // MARK: Length-delimited values

  /// Reads a length prefix and checks that so many bytes remain in the current message.
  @inlinable @inline(__always)
  public mutating func readLength() throws(WireDecodingError) -> Int {
    let start = position
    let length = try readVarint()
    guard length <= UInt64(limit &- position) else {
      throw WireDecodingError(.lengthOutOfRange, at: start, detail: "length \(length), \(limit &- position) bytes left")
    }
    return Int(truncatingIfNeeded: length)
  }

  /// Reads a string field, rejecting bytes that are not valid UTF-8.
  @inlinable
  public mutating func readString() throws(WireDecodingError) -> String {
    let length = try readLength()
    let bytes = UnsafeRawBufferPointer(start: base + position, count: length)
    let string = String(decoding: bytes, as: UTF8.self)
    // ASCII is valid UTF-8. Otherwise: decoding repairs invalid sequences with U+FFFD, which
    // always changes the bytes, so valid input is exactly input that came back unchanged.
    // Both checks together cost a fraction of String(validating:as:) on short strings.
    guard UTF8Check.isASCII(bytes) || UTF8Check.isSame(string, bytes) else {
      throw WireDecodingError(.invalidUTF8, at: position &+ (UTF8Check.invalidOffset(bytes) ?? 0))
    }
    position &+= length
    return string
  }

  /// Reads a bytes field.
  @inlinable
  public mutating func readBytes() throws(WireDecodingError) -> [UInt8] {
    let length = try readLength()
    let bytes = [UInt8](UnsafeRawBufferPointer(start: base + position, count: length))
    position &+= length
    return bytes
  }

  /// Reads a length-delimited sub-message occurrence and merges it into `message`.
  @inlinable
  public mutating func readMessage<M: WireMessage>(into message: inout M) throws(WireDecodingError) {
    try readSubMessage(named: M.protoName) { reader throws(WireDecodingError) in try message.decodeFields(from: &reader) }
  }

  /// Reads a length-delimited sub-message occurrence with `body`, which reads up to the
  /// sub-message's end: the reader stops there, one level deeper. What `body` leaves unread
  /// is skipped.
  ///
  /// - Parameter name: The sub-message's proto name, for the error when nesting is too deep.
  @inlinable
  public mutating func readSubMessage<Result>(
    named name: @autoclosure () -> String, _ body: (inout WireReader) throws(WireDecodingError) -> Result
  ) throws(WireDecodingError) -> Result {
    let start = position
    let length = try readLength()
    guard depthRemaining > 0 else { throw WireDecodingError(.nestingTooDeep, at: start, detail: name()) }
    let outerLimit = limit
    limit = position &+ length
    depthRemaining &-= 1
    let result = try body(&self)
    depthRemaining &+= 1
    position = limit
    limit = outerLimit
    return result
  }

  /// The bytes left in the current message, which the reader then stands at the end of: a
  /// sub-message kept in its encoded form.
  public mutating func readRemainingBytes() -> UnsafeRawBufferPointer {
    defer { position = limit }
    return UnsafeRawBufferPointer(start: base + position, count: limit &- position)
  }

  /// Skips a string field, checking that it is UTF-8 as ``readString()`` does, without
  /// building the string.
  public mutating func skipString() throws(WireDecodingError) {
    let length = try readLength()
    if let invalid = UTF8Check.invalidOffset(UnsafeRawBufferPointer(start: base + position, count: length)) {
      throw WireDecodingError(.invalidUTF8, at: position &+ invalid)
    }
    position &+= length
  }

  /// Reads a packed run of varints, calling `element` for each.
  @inlinable
  public mutating func readPackedVarints(_ element: (UInt64) -> Void) throws(WireDecodingError) {
    let length = try readLength()
    let outerLimit = limit
    limit = position &+ length
    while position < limit {
      element(try readVarint())
    }
    limit = outerLimit
  }

  // MARK: Unknown fields

  /// Skips the value of a field no known field claims and appends the whole field, tag
  /// included, to `unknownFields`.
  ///
  /// - Parameters:
  ///   - tag: The tag just read.
  ///   - tagStart: The ``offset`` before the tag was read.
  /// - Throws: field number 0, wire types 6 and 7, an end-group without its start, and any
  ///   truncation or malformation inside the value.
  public mutating func skipField(tag: UInt32, startingAt tagStart: Int, into unknownFields: inout UnknownFields)
    throws(WireDecodingError)
  {
    try skipField(tag: tag, startingAt: tagStart)
    unknownFields.append(UnsafeRawBufferPointer(start: base + tagStart, count: position - tagStart))
  }

  /// Skips the value of a field, keeping nothing: for a reader that checks an encoding
  /// rather than decoding it. Throws as ``skipField(tag:startingAt:into:)`` does.
  public mutating func skipField(tag: UInt32, startingAt tagStart: Int) throws(WireDecodingError) {
    try skipValue(tag: tag, tagStart: tagStart)
  }

  mutating func skipValue(tag: UInt32, tagStart: Int) throws(WireDecodingError) {
    let fieldNumber = tag >> 3
    guard fieldNumber != 0 else { throw WireDecodingError(.invalidFieldNumber, at: tagStart, detail: "field 0") }
    switch WireType(rawValue: UInt8(tag & 7)) {
    case .varint:
      _ = try readVarint()
    case .fixed64:
      _ = try readFixed64()
    case .lengthDelimited:
      position &+= try readLength()
    case .fixed32:
      _ = try readFixed32()
    case .startGroup:
      guard depthRemaining > 0 else { throw WireDecodingError(.nestingTooDeep, at: tagStart, detail: "group \(fieldNumber)") }
      depthRemaining &-= 1
      while true {
        let innerStart = position
        guard position < limit else { throw WireDecodingError(.truncated, at: tagStart, detail: "group \(fieldNumber) not closed") }
        let inner = try readTag()
        if inner & 7 == UInt32(WireType.endGroup.rawValue) {
          guard inner >> 3 == fieldNumber else {
            throw WireDecodingError(.unmatchedGroup, at: innerStart, detail: "end of group \(inner >> 3) inside group \(fieldNumber)")
          }
          break
        }
        try skipValue(tag: inner, tagStart: innerStart)
      }
      depthRemaining &+= 1
    case .endGroup:
      throw WireDecodingError(.unmatchedGroup, at: tagStart, detail: "end of group \(fieldNumber) without a start")
    case nil:
      throw WireDecodingError(.invalidWireType, at: tagStart, detail: "wire type \(tag & 7) in field \(fieldNumber)")
    }
  }
}
