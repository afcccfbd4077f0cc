/// A field's value with its Swift type erased, as reflection hands it to tools (`dump`,
/// the JSON mapping, property tests). The hot encode/decode paths never use it.
public enum FieldValue: Sendable {
  case double(Double)
  case float(Float)
  case int64(Int64)
  case uint32(UInt32)
  case bool(Bool)
  case string(String)
  case bytes([UInt8])
  /// A closed enum's number.
  case enumeration(Int32)
  case message(any ReflectableMessage)
}

/// The proto type of a field, which decides how tools print and parse its values.
public enum FieldType: Sendable {
  case double
  case float
  case int64
  /// Zigzag-encoded on the wire; the same values and JSON form as ``int64``.
  case sint64
  case uint32
  case bool
  case string
  case bytes
  case enumeration(EnumDescriptor)
  case message(any ReflectableMessage.Type)
}

/// A Swift type that stands for one proto field type.
public protocol FieldRepresentable: Sendable {
  /// The proto type this Swift type maps to by default.
  static var fieldType: FieldType { get }
  /// The value, type-erased.
  var fieldValue: FieldValue { get }
  /// Recovers a value from its type-erased form; `nil` when the kinds do not match.
  init?(fieldValue: FieldValue)
}

extension Double: FieldRepresentable {
  public static var fieldType: FieldType { .double }
  public var fieldValue: FieldValue { .double(self) }
  public init?(fieldValue: FieldValue) {
    guard case .double(let value) = fieldValue else { return nil }
    self = value
  }
}

extension Float: FieldRepresentable {
  public static var fieldType: FieldType { .float }
  public var fieldValue: FieldValue { .float(self) }
  public init?(fieldValue: FieldValue) {
    guard case .float(let value) = fieldValue else { return nil }
    self = value
  }
}

extension Int64: FieldRepresentable {
  public static var fieldType: FieldType { .int64 }
  public var fieldValue: FieldValue { .int64(self) }
  public init?(fieldValue: FieldValue) {
    guard case .int64(let value) = fieldValue else { return nil }
    self = value
  }
}

extension UInt32: FieldRepresentable {
  public static var fieldType: FieldType { .uint32 }
  public var fieldValue: FieldValue { .uint32(self) }
  public init?(fieldValue: FieldValue) {
    guard case .uint32(let value) = fieldValue else { return nil }
    self = value
  }
}

extension Bool: FieldRepresentable {
  public static var fieldType: FieldType { .bool }
  public var fieldValue: FieldValue { .bool(self) }
  public init?(fieldValue: FieldValue) {
    guard case .bool(let value) = fieldValue else { return nil }
    self = value
  }
}

extension String: FieldRepresentable {
  public static var fieldType: FieldType { .string }
  public var fieldValue: FieldValue { .string(self) }
  public init?(fieldValue: FieldValue) {
    guard case .string(let value) = fieldValue else { return nil }
    self = value
  }
}

extension [UInt8]: FieldRepresentable {
  public static var fieldType: FieldType { .bytes }
  public var fieldValue: FieldValue { .bytes(self) }
  public init?(fieldValue: FieldValue) {
    guard case .bytes(let value) = fieldValue else { return nil }
    self = value
  }
}
