public import PushlineWire

/// A message that describes its fields, so that tools can print, parse and generate it
/// without knowing its type: `pushline dump`, the JSON mapping, property tests.
public protocol ReflectableMessage: WireMessage, FieldRepresentable {
  /// The message's known fields in ascending field number.
  static var fields: [FieldDescriptor<Self>] { get }
}

extension ReflectableMessage {
  public static var fieldType: FieldType { .message(Self.self) }
  public var fieldValue: FieldValue { .message(self) }
  public init?(fieldValue: FieldValue) {
    guard case .message(let value) = fieldValue, let message = value as? Self else { return nil }
    self = message
  }

  /// Every present field with its values, in field-number order (repeated fields with at
  /// least one element).
  public var presentFields: [(field: AnyFieldDescriptor, values: [FieldValue])] {
    Self.fields.compactMap { field in
      let values = field.values(self)
      return values.isEmpty ? nil : (AnyFieldDescriptor(field), values)
    }
  }

  /// Sets a field found by number from type-erased values; `false` when the number is
  /// unknown or a value has the wrong kind.
  public mutating func setField(number: Int, to values: [FieldValue]) -> Bool {
    guard let field = Self.fields.first(where: { $0.number == number }) else { return false }
    return field.setValues(&self, values)
  }

  /// The field descriptors, type-erased.
  public static var anyFields: [AnyFieldDescriptor] { fields.map(AnyFieldDescriptor.init) }
}
