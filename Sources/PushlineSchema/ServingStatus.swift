/// Whether a server or service is serving (`pushline.rpc.ServingStatus`), as gRPC's health
/// checking protocol reports it.
public enum ServingStatus: Int32, ProtoEnum {
  case unknown = 0
  case serving = 1
  case notServing = 2
  /// The service asked about does not exist on this server.
  case serviceUnknown = 3

  public static let protoName = "pushline.rpc.ServingStatus"

  public var name: String {
    switch self {
    case .unknown: "SERVING_STATUS_UNKNOWN"
    case .serving: "SERVING"
    case .notServing: "NOT_SERVING"
    case .serviceUnknown: "SERVICE_UNKNOWN"
    }
  }
}
