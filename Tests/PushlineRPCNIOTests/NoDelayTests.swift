import NIOCore
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import Testing

/// Both ends of a connection write each flush at once (Nagle's algorithm off), and set
/// nothing that needs privileges: a broker run by an unprivileged user serves, and its clients
/// connect. `TCP_NODELAY` given as a socket-level option sets `SO_DEBUG` instead, which is
/// refused without `CAP_NET_ADMIN` — the server then closed every connection it accepted.
@Suite("Socket options")
struct NoDelayTests {
  @Test func bothEndsSendWithoutDelayAndNeedNoPrivileges() async throws {
    try await RPCServer(router: RPCRouter(), configuration: .init(port: 0)).withRunningServer { address in
      let port = address.port!
      try await RPCClient.withConnection(host: "127.0.0.1", port: port) { connection in
        _ = try await connection.unary(HealthService.checkMethod, request: HealthCheckRequest(), response: HealthCheckResponse.self)
        let sockets = OpenTCPSocket.connected(withPort: port)
        #expect(sockets.count == 2, "the client's socket and the one the server accepted: \(sockets)")
        for socket in sockets {
          #expect(socket.sendsWithoutDelay && !socket.isDebugging, "\(socket)")
        }
      }
    }
  }
}
