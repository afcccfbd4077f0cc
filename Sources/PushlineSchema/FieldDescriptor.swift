/// How a field is declared: `required`, `optional` or `repeated`.
public enum FieldLabel: Sendable, Hashable {
  case required, optional, repeated
}

/// One field of a message: its number, name and type, and type-erased access to its value.
///
/// Every field reads and writes as a list: empty when absent, one element for a present
/// singular field, any number for a repeated one.
public struct FieldDescriptor<Message>: Sendable {
  /// The field number on the wire.
  public let number: Int
  /// The proto name, which is also the JSON name: the schema uses lowerCamelCase names.
  public let name: String
  public let label: FieldLabel
  public let type: FieldType
  /// The present values of the field in `message`.
  public let values: @Sendable (Message) -> [FieldValue]
  /// Replaces the field's values; returns `false`, changing nothing, if a value has the
  /// wrong kind or a singular field gets more than one.
  public let setValues: @Sendable (inout Message, [FieldValue]) -> Bool

  /// A `required` field.
  public static func required<Value: FieldRepresentable>(
    _ number: Int, _ name: String, _ keyPath: any WritableKeyPath<Message, Value> & Sendable,
    as type: FieldType = Value.fieldType
  ) -> Self {
    Self(
      number: number, name: name, label: .required, type: type,
      values: { [$0[keyPath: keyPath].fieldValue] },
      setValues: { message, values in
        guard values.count == 1, let value = Value(fieldValue: values[0]) else { return false }
        message[keyPath: keyPath] = value
        return true
      }
    )
  }

  /// An `optional` field, `nil` when absent.
  public static func optional<Value: FieldRepresentable>(
    _ number: Int, _ name: String, _ keyPath: any WritableKeyPath<Message, Value?> & Sendable,
    as type: FieldType = Value.fieldType
  ) -> Self {
    Self(
      number: number, name: name, label: .optional, type: type,
      values: { $0[keyPath: keyPath].map { [$0.fieldValue] } ?? [] },
      setValues: { message, values in
        guard values.count <= 1 else { return false }
        guard let first = values.first else {
          message[keyPath: keyPath] = nil
          return true
        }
        guard let value = Value(fieldValue: first) else { return false }
        message[keyPath: keyPath] = value
        return true
      }
    )
  }

  /// A `repeated` field.
  public static func repeated<Value: FieldRepresentable>(
    _ number: Int, _ name: String, _ keyPath: any WritableKeyPath<Message, [Value]> & Sendable,
    as type: FieldType = Value.fieldType
  ) -> Self {
    Self(
      number: number, name: name, label: .repeated, type: type,
      values: { $0[keyPath: keyPath].map(\.fieldValue) },
      setValues: { message, values in
        var converted: [Value] = []
        converted.reserveCapacity(values.count)
        for value in values {
          guard let element = Value(fieldValue: value) else { return false }
          converted.append(element)
        }
        message[keyPath: keyPath] = converted
        return true
      }
    )
  }
}

/// A field descriptor with its message type erased, for tools that walk any message.
public struct AnyFieldDescriptor: Sendable {
  public let number: Int
  public let name: String
  public let label: FieldLabel
  public let type: FieldType

  /// Erases `field`'s message type.
  public init<Message>(_ field: FieldDescriptor<Message>) {
    number = field.number
    name = field.name
    label = field.label
    type = field.type
  }
}
