import PushlineSchema

/// `/pushline.Health/Check`, as gRPC's health checking protocol: SERVING for the server as a
/// whole (an empty service name) and for every method prefix it serves, SERVICE_UNKNOWN for
/// any other service.
public enum HealthService {
  /// The method's name.
  public static let checkMethod = "/pushline.Health/Check"

  /// Adds the health check to `router`, answering for the services it serves.
  public static func register(in router: inout RPCRouter) {
    let services = Set(router.methods.compactMap { method in
      method.split(separator: "/", omittingEmptySubsequences: true).first.map(String.init)
    } + ["pushline.Health"])
    router.registerUnary(checkMethod, request: HealthCheckRequest.self, response: HealthCheckResponse.self) { request, _ in
      let service = request.service ?? ""
      return HealthCheckResponse(status: service.isEmpty || services.contains(service) ? .serving : .serviceUnknown)
    }
  }
}
