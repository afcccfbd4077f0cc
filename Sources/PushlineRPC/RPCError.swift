public import PushlineSchema

/// A call that did not end with OK: its status code, message and trailing metadata.
///
/// Handlers throw it to end a call with a chosen status; clients receive it for every call
/// that did not succeed.
public struct RPCError: Error, Hashable, Sendable, CustomStringConvertible {
  public var code: StatusCode
  public var message: String
  public var metadata: [MetadataEntry]
  /// For retryable codes: how long the server asks the client to wait, in milliseconds.
  public var retryAfterMillis: UInt32?

  /// An error with `code` and `message`.
  public init(code: StatusCode, message: String, metadata: [MetadataEntry] = [], retryAfterMillis: UInt32? = nil) {
    self.code = code
    self.message = message
    self.metadata = metadata
    self.retryAfterMillis = retryAfterMillis
  }

  /// The error a STATUS frame carries.
  public init(status: CallStatus) {
    self.init(
      code: StatusCode(rawValue: status.code), message: status.message ?? "", metadata: status.metadata,
      retryAfterMillis: status.retryAfterMillis)
  }

  /// The status that carries this error.
  public var status: CallStatus {
    var status = CallStatus(code: code.rawValue)
    status.message = message
    status.metadata = metadata
    status.retryAfterMillis = retryAfterMillis
    return status
  }

  /// For example `UNAVAILABLE: the connection closed`.
  public var description: String { message.isEmpty ? "\(code)" : "\(code): \(message)" }
}
