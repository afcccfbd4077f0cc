import GRPCCore
import GRPCNIOTransportHTTP2
import NIOCore
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import PushlineWire

/// The same two methods on Pushline RPC and on grpc-swift-2 (HTTP/2, hand-written service
/// over raw bytes): Echo returns its 200-byte request; Stream sends N 200-byte messages.
enum RPCBenchmarkPeers {
  /// A ~200-byte message: Pushline's handlers decode and encode it, gRPC's pass the bytes.
  static let payload: MetadataEntry = {
    var message = MetadataEntry(key: "bench")
    message.value = String(repeating: "x", count: 192)
    return message
  }()

  static let echo = "/bench.Bench/Echo"
  static let stream = "/bench.Bench/Stream"

  // MARK: Servers

  /// Runs the chosen server on a free loopback port, reports the port, serves until `stop` returns.
  static func serve(_ implementation: String, reportPort: (Int) -> Void, until stop: () async -> Void) async throws {
    switch implementation {
    case "pushline":
      var router = PushlineRPC.RPCRouter()
      router.registerUnary(echo, request: MetadataEntry.self, response: MetadataEntry.self) { request, _ in request }
      router.registerServerStreaming(stream, request: MetadataEntry.self, response: MetadataEntry.self) { request, writer, _ in
        for _ in 0..<(Int(request.key) ?? 0) { try await writer.write(payload) }
      }
      try await RPCServer(router: router, configuration: .init(port: 0)).withRunningServer { address in
        reportPort(address.port!)
        await stop()
      }
    default:
      let transport = HTTP2ServerTransport.Posix(address: .ipv4(host: "127.0.0.1", port: 0), transportSecurity: .plaintext)
      try await withGRPCServer(transport: transport, services: [GRPCBenchService()]) { _ in
        reportPort(try await transport.listeningAddress.ipv4!.port)
        await stop()
      }
    }
  }

  struct GRPCBenchService: RegistrableRPCService {
    func registerMethods<Transport: ServerTransport>(with router: inout GRPCCore.RPCRouter<Transport>) {
      router.registerHandler(
        forMethod: MethodDescriptor(fullyQualifiedService: "bench.Bench", method: "Echo"),
        deserializer: RawBytes(), serializer: RawBytes()
      ) { request, _ in
        var message: [UInt8] = []
        for try await part in request.messages { message = part }
        return StreamingServerResponse(single: ServerResponse(message: message))
      }
      let bytes = RPCBenchmarkPeers.payload.serializedBytes()
      router.registerHandler(
        forMethod: MethodDescriptor(fullyQualifiedService: "bench.Bench", method: "Stream"),
        deserializer: RawBytes(), serializer: RawBytes()
      ) { request, _ in
        var requested = 0
        for try await part in request.messages { requested = Int(String(decoding: part, as: UTF8.self)) ?? 0 }
        let count = requested
        return StreamingServerResponse { writer in
          for _ in 0..<count { try await writer.write(bytes) }
          return [:]
        }
      }
    }
  }

  struct RawBytes: MessageSerializer, MessageDeserializer {
    func serialize<Bytes: GRPCContiguousBytes>(_ message: [UInt8]) throws -> Bytes { Bytes(message) }
    func deserialize<Bytes: GRPCContiguousBytes>(_ serializedMessageBytes: Bytes) throws -> [UInt8] {
      serializedMessageBytes.withUnsafeBytes { Array($0) }
    }
  }

  // MARK: Clients

  /// One connection's worth of calls.
  struct Client: Sendable {
    var unary: @Sendable () async throws -> Void
    var stream: @Sendable (Int) async throws -> Int
  }

  static func withClient(_ implementation: String, port: Int, _ body: (Client) async throws -> Void) async throws {
    switch implementation {
    case "pushline":
      try await RPCClient.withConnection(host: "127.0.0.1", port: port) { connection in
        try await body(Client(
          unary: { _ = try await connection.unary(echo, request: payload, response: MetadataEntry.self) },
          stream: { count in
            var received = 0
            for try await _ in connection.serverStreaming(stream, request: MetadataEntry(key: "\(count)"), response: MetadataEntry.self) {
              received += 1
            }
            return received
          }))
      }
    default:
      let transport = try HTTP2ClientTransport.Posix(target: .ipv4(address: "127.0.0.1", port: port), transportSecurity: .plaintext)
      try await withGRPCClient(transport: transport) { client in
        let bytes = payload.serializedBytes()
        try await body(Client(
          unary: {
            _ = try await client.unary(
              request: ClientRequest(message: bytes), descriptor: MethodDescriptor(fullyQualifiedService: "bench.Bench", method: "Echo"),
              serializer: RawBytes(), deserializer: RawBytes(), options: .defaults
            ) { try $0.message }
          },
          stream: { count in
            try await client.serverStreaming(
              request: ClientRequest(message: Array("\(count)".utf8)),
              descriptor: MethodDescriptor(fullyQualifiedService: "bench.Bench", method: "Stream"),
              serializer: RawBytes(), deserializer: RawBytes(), options: .defaults
            ) { response in
              var received = 0
              for try await _ in response.messages { received += 1 }
              return received
            }
          }))
      }
    }
  }
}
