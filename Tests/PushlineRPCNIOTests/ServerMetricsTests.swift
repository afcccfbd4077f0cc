import MetricsTestKit
import NIOCore
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import Testing

@Suite("Server connection metrics")
struct ServerMetricsTests {
  /// Two clients connected: two open, two accepted; once one leaves, one open, still two
  /// accepted.
  @Test func openAndAcceptedConnectionsAreCounted() async throws {
    let metrics = TestMetrics()
    try await RPCServer(router: RPCRouter(), configuration: .init(port: 0, metrics: metrics)).withRunningServer { address in
      let port = address.port!
      try await RPCClient.withConnection(host: "127.0.0.1", port: port) { staying in
        try await RPCClient.withConnection(host: "127.0.0.1", port: port) { leaving in
          // A completed call proves that the server has taken the connection in.
          _ = try await leaving.unary(HealthService.checkMethod, request: HealthCheckRequest(), response: HealthCheckResponse.self)
          _ = try await staying.unary(HealthService.checkMethod, request: HealthCheckRequest(), response: HealthCheckResponse.self)
          #expect(try metrics.expectGauge("pushline_connections").lastValue == 2)
        }
        // The server learns of the close a moment later: wait for the gauge itself.
        while try metrics.expectGauge("pushline_connections").lastValue != 1 { await Task.yield() }
        #expect(try metrics.expectCounter("pushline_connections_accepted_total").totalValue == 2)
      }
    }
  }
}
