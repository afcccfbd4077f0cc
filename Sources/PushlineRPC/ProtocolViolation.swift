/// A peer broke the framing rules; the connection answers with a GOAWAY and closes.
public struct ProtocolViolation: Error, Hashable, Sendable, CustomStringConvertible {
  /// What rule was broken. Extensible, like gRPC's error codes.
  public struct Code: Hashable, Sendable, CustomStringConvertible {
    private enum Wrapped: Hashable, Sendable { case badPreface, frameTooLarge, reservedBitSet }
    private let wrapped: Wrapped
    private init(_ wrapped: Wrapped) { self.wrapped = wrapped }

    /// The connection did not start with the `PUSHLINE` preface.
    public static let badPreface = Code(.badPreface)
    /// A frame's announced payload is larger than the connection's maximum frame size.
    public static let frameTooLarge = Code(.frameTooLarge)
    /// The reserved high bit of a call id is set.
    public static let reservedBitSet = Code(.reservedBitSet)

    public var description: String {
      switch wrapped {
      case .badPreface: "bad preface"
      case .frameTooLarge: "frame too large"
      case .reservedBitSet: "reserved bit set"
      }
    }
  }

  public var code: Code
  /// Details for logs and the GOAWAY message.
  public var message: String

  /// A violation of `code`, explained by `message`.
  public init(_ code: Code, _ message: String) {
    self.code = code
    self.message = message
  }

  public var description: String { "\(code): \(message)" }
}
