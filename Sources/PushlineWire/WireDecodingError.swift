/// Why a byte string is not a valid message, and where.
///
/// Decoding is total: every input either yields a message or exactly one of these errors.
/// ``offset`` is the byte offset, in the input handed to the decoder, where the offending
/// element starts (for ``Code-swift.struct/missingRequiredField``, the end of the input,
/// where the check is made).
public struct WireDecodingError: Error, Hashable, Sendable {
  /// The kind of problem. An extensible set of values rather than an enum, so that new
  /// kinds can be added without breaking exhaustive switches in callers.
  public struct Code: Hashable, Sendable, CustomStringConvertible {
    private enum Wrapped: Hashable, Sendable {
      case truncated, malformedVarint, invalidFieldNumber, invalidWireType, unmatchedGroup
      case lengthOutOfRange, nestingTooDeep, messageTooLarge, invalidUTF8, missingRequiredField
    }

    private let wrapped: Wrapped
    private init(_ wrapped: Wrapped) { self.wrapped = wrapped }

    /// The input ends inside a tag, a varint, a fixed-width value or a length-delimited value.
    public static let truncated = Code(.truncated)
    /// A varint longer than ten bytes, or a tag varint longer than five bytes or above 2^32.
    public static let malformedVarint = Code(.malformedVarint)
    /// Field number 0, or one at or above 2^29.
    public static let invalidFieldNumber = Code(.invalidFieldNumber)
    /// Wire type 6 or 7.
    public static let invalidWireType = Code(.invalidWireType)
    /// An end-group tag without its start, or one that closes a different field's group.
    public static let unmatchedGroup = Code(.unmatchedGroup)
    /// A length prefix that runs past the end of the enclosing message or is 2^31 or more.
    public static let lengthOutOfRange = Code(.lengthOutOfRange)
    /// Sub-messages or groups nested deeper than ``DecodingOptions/maxDepth``.
    public static let nestingTooDeep = Code(.nestingTooDeep)
    /// The input is larger than ``DecodingOptions/maxMessageSize``.
    public static let messageTooLarge = Code(.messageTooLarge)
    /// A string field holds bytes that are not valid UTF-8.
    public static let invalidUTF8 = Code(.invalidUTF8)
    /// A `required` field is absent once all occurrences have been merged.
    public static let missingRequiredField = Code(.missingRequiredField)

    /// A short, stable name for the code, used in messages and logs.
    public var description: String {
      switch wrapped {
      case .truncated: "truncated input"
      case .malformedVarint: "malformed varint"
      case .invalidFieldNumber: "invalid field number"
      case .invalidWireType: "invalid wire type"
      case .unmatchedGroup: "unmatched group"
      case .lengthOutOfRange: "length out of range"
      case .nestingTooDeep: "nesting too deep"
      case .messageTooLarge: "message too large"
      case .invalidUTF8: "invalid UTF-8"
      case .missingRequiredField: "missing required field"
      }
    }
  }

  /// What is wrong.
  public var code: Code
  /// Where the problem starts, in bytes from the start of the input.
  public var offset: Int
  /// Extra context: the field number or the path of a missing required field.
  public var detail: String

  /// Creates an error; decoders in this package and hand-written messages throw these.
  public init(_ code: Code, at offset: Int, detail: String = "") {
    self.code = code
    self.offset = offset
    self.detail = detail
  }
}

extension WireDecodingError: CustomStringConvertible {
  /// For example `truncated input at byte 17 (field 4)`.
  public var description: String {
    detail.isEmpty ? "\(code) at byte \(offset)" : "\(code) at byte \(offset) (\(detail))"
  }
}
