/// gRPC's status codes, which end every call and explain every GOAWAY.
///
/// A struct rather than an enum so that a code from a newer peer is carried, not rejected.
public struct StatusCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  public var rawValue: UInt32

  public init(rawValue: UInt32) { self.rawValue = rawValue }

  public static let ok = StatusCode(rawValue: 0)
  public static let cancelled = StatusCode(rawValue: 1)
  public static let unknown = StatusCode(rawValue: 2)
  public static let invalidArgument = StatusCode(rawValue: 3)
  public static let deadlineExceeded = StatusCode(rawValue: 4)
  public static let notFound = StatusCode(rawValue: 5)
  public static let alreadyExists = StatusCode(rawValue: 6)
  public static let permissionDenied = StatusCode(rawValue: 7)
  public static let resourceExhausted = StatusCode(rawValue: 8)
  public static let failedPrecondition = StatusCode(rawValue: 9)
  public static let aborted = StatusCode(rawValue: 10)
  public static let outOfRange = StatusCode(rawValue: 11)
  public static let unimplemented = StatusCode(rawValue: 12)
  public static let `internal` = StatusCode(rawValue: 13)
  public static let unavailable = StatusCode(rawValue: 14)
  public static let dataLoss = StatusCode(rawValue: 15)
  public static let unauthenticated = StatusCode(rawValue: 16)

  private static let names = [
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
    "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
    "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
  ]

  /// gRPC's name for the code, for example `UNAVAILABLE`, or the number for a code it does not define.
  public var description: String {
    rawValue < Self.names.count ? Self.names[Int(rawValue)] : "CODE(\(rawValue))"
  }
}
