/// A closed (proto2) enum mapped by hand.
///
/// Decoders keep a number the enum does not define as an unknown field, so it survives a
/// re-encode, and the field reads as absent.
public protocol ProtoEnum: RawRepresentable<Int32>, CaseIterable, FieldRepresentable, Hashable {
  /// The fully qualified proto name, for example `pushline.tracker.CardType`.
  static var protoName: String { get }
  /// The value's proto name, for example `BROWSE`.
  var name: String { get }
}

extension ProtoEnum {
  /// The names and numbers of the enum's values, for tools.
  public static var descriptor: EnumDescriptor {
    EnumDescriptor(name: protoName, values: allCases.map { ($0.name, $0.rawValue) })
  }

  public static var fieldType: FieldType { .enumeration(descriptor) }
  public var fieldValue: FieldValue { .enumeration(rawValue) }
  public init?(fieldValue: FieldValue) {
    guard case .enumeration(let number) = fieldValue else { return nil }
    self.init(rawValue: number)
  }
}

/// The values of a closed enum, by name and number.
public struct EnumDescriptor: Sendable {
  /// The fully qualified proto name.
  public let name: String
  /// Every defined value, in declaration order.
  public let values: [(name: String, number: Int32)]

  /// The name of `number`, or `nil` when the enum does not define it.
  public func name(of number: Int32) -> String? {
    values.first { $0.number == number }?.name
  }

  /// The number named `name`, or `nil` when the enum does not define it.
  public func number(named name: String) -> Int32? {
    values.first { $0.name == name }?.number
  }
}
