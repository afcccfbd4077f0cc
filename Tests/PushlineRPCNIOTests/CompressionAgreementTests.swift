import NIOCore
import PushlineRPC
import PushlineSchema
import PushlineWire
import Testing

@testable import PushlineRPCNIO

/// The client holds a server to the compression their handshake agreed on.
@Suite("Compression agreement")
struct CompressionAgreementTests {
  /// A response flagged compressed on a connection that agreed on none ends its call with
  /// INTERNAL (PROTOCOL 2.9), rather than being inflated as if deflate had been agreed.
  @Test(.timeLimit(.minutes(1))) func aCompressedResponseWithoutCompressionEndsTheCall() async throws {
    try await RawServer.run { port in
      try await RPCClient.withConnection(host: "127.0.0.1", port: port) { connection in
        _ = await #expect(throws: RPCError(code: .internal, message: "a compressed message on a connection without compression")) {
          _ = try await connection.unary(HealthService.checkMethod, request: HealthCheckRequest(), response: HealthCheckResponse.self)
        }
      }
    } serve: { server in
      var callID: UInt32?
      while callID == nil {
        if case .frame(let frame) = try await server.next(), frame.kind == .callStart { callID = frame.callID }
      }
      let hello = ServerHello(version: 1)  // no compression chosen: IDENTITY
      let response = Deflate.compress(HealthCheckResponse(status: .serving).serializedBytes())
      try await server.send(
        ConnectionPreface().bytes + Frame(kind: .handshake, callID: 0, payload: hello.serializedBytes()).bytes
          + Frame(kind: .message, callID: callID!, payload: [1] + response).bytes)
      do {
        while true { _ = try await server.next() }  // until the client has gone
      } catch {}
    }
  }
}
