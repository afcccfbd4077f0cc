import NIOCore
import PushlineRPC
import PushlineRPCNIO
import Testing

@testable import PushlineCLI

@Suite("pushline ping")
struct PingCommandTests {
  @Test func aServingServerIsReportedWithItsRoundTrips() async throws {
    try await RPCServer(router: RPCRouter(), configuration: .init(port: 0)).withRunningServer { address in
      let line = try await PingCommand.check(host: "127.0.0.1", port: address.port!, timeout: .seconds(60))
      #expect(line.hasPrefix("127.0.0.1:\(address.port!) SERVING: connect "))
      #expect(line.contains("handshake + health check") && line.contains("ping"))
    }
  }

  @Test func nothingListeningIsAFailure() async throws {
    var port = 0
    try await RPCServer(router: RPCRouter(), configuration: .init(port: 0)).withRunningServer { port = $0.port! }
    await #expect {
      try await PingCommand.check(host: "127.0.0.1", port: port, timeout: .seconds(60))
    } throws: { error in
      "\(error)".hasPrefix("127.0.0.1:\(port): UNAVAILABLE")
    }
  }

  @Test("addresses", arguments: [
    ("127.0.0.1:7400", "127.0.0.1", 7400), ("[::1]:9", "::1", 9), ("localhost:65535", "localhost", 65_535),
  ])
  func addresses(text: String, host: String, port: Int) throws {
    let split = try #require(ServerAddress(text))
    #expect(split.host == host && split.port == port)
  }

  @Test("bad addresses", arguments: ["7400", "host:", ":7400", "host:0", "host:70000", "host:x"])
  func badAddresses(text: String) {
    #expect(ServerAddress(text) == nil)
  }
}
