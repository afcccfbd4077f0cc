/// A parsed JSON document that keeps every number's literal text, because protobuf's JSON
/// mapping needs exact 64-bit integers, which a parse into `Double` would round.
public enum JSONValue: Hashable, Sendable {
  case null
  case bool(Bool)
  /// A number as written, for example `-12`, `1.5e3`.
  case number(String)
  case string(String)
  case array([JSONValue])
  /// Members in document order; a duplicate key is rejected by the parser.
  case object([(key: String, value: JSONValue)])

  public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
    switch (lhs, rhs) {
    case (.null, .null): true
    case (.bool(let a), .bool(let b)): a == b
    case (.number(let a), .number(let b)): a == b
    case (.string(let a), .string(let b)): a == b
    case (.array(let a), .array(let b)): a == b
    case (.object(let a), .object(let b)): a.elementsEqual(b) { $0.key == $1.key && $0.value == $1.value }
    default: false
    }
  }

  public func hash(into hasher: inout Hasher) {
    switch self {
    case .null: hasher.combine(0)
    case .bool(let value): hasher.combine(value)
    case .number(let value), .string(let value): hasher.combine(value)
    case .array(let values): hasher.combine(values)
    case .object(let members):
      for member in members {
        hasher.combine(member.key)
        hasher.combine(member.value)
      }
    }
  }
}
