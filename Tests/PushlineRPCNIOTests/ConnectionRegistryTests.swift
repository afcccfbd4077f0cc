import CoreMetrics
import Dispatch
import NIOCore
import NIOEmbedded
import PushlineRPC
@testable import PushlineRPCNIO
import PushlineSchema
import PushlineWire
import Testing

@Suite("Connection registry")
struct ConnectionRegistryTests {
  /// Two connections registered at the same time, the first one's count recorded late (its
  /// thread descheduled): the gauge still ends at two, as each count is recorded under the
  /// registry's lock, in the order the counts changed.
  @Test(.timeLimit(.minutes(1))) func theOpenGaugeEndsAtTheCountWhenRegistrationsCross() async throws {
    let gauge = OvertakenGauge()
    let registry = ConnectionRegistry(metrics: gauge)
    let channels = [NIOAsyncTestingChannel(), NIOAsyncTestingChannel()]
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
      DispatchQueue.global().async {
        let first = DispatchGroup()
        DispatchQueue.global().async(group: first) { registry.register(channels[0], isRefused: false) }
        gauge.firstIsWaiting.wait()
        registry.register(channels[1], isRefused: false)
        first.wait()
        done.resume()
      }
    }
    #expect(gauge.value == 2)
    for channel in channels { try await channel.close() }
    #expect(gauge.value == 0)
  }

  /// Once every connection has been closed at once (a cancelled server, SIGQUIT), one that
  /// registers later — accepted just before the listener closed — is closed as it arrives,
  /// rather than kept open, with the server waiting for it to leave.
  @Test func aConnectionRegisteredAfterCloseAllIsClosed() throws {
    let registry = ConnectionRegistry(metrics: NOOPMetricsHandler.instance)
    let (open, _) = try ServerConnectionHandlerTests.channel()
    registry.register(open, isRefused: false)
    var noted: Int?
    registry.closeAll { noted = $0 }
    let (late, _) = try ServerConnectionHandlerTests.channel()
    registry.register(late, isRefused: false)
    #expect(noted == 1 && !open.isActive && !late.isActive)
  }

  /// The GOAWAY `channel` has written, decoded.
  static func goAway(on channel: EmbeddedChannel) throws -> GoAway {
    let frame = try #require(ServerConnectionHandlerTests.readFrames(channel).first { $0.kind == .goAway })
    return try GoAway(serializedBytes: frame.payload)
  }

  /// Each connection's shutdown GOAWAY tells its client when to come back, with a hint of its
  /// own drawn from the reconnect spread — a connection registered once the shutdown has begun
  /// too; a connection refused past the accept rate whose handshake has not arrived gets its
  /// refusal's GOAWAY, with the refusal's hint, in place of the ServerHello.
  @Test func shutdownGoAwaysCarryHintsDrawnFromTheReconnectSpread() throws {
    let registry = ConnectionRegistry(metrics: NOOPMetricsHandler.instance)
    let channels = try (0..<20).map { _ in try ServerConnectionHandlerTests.channel().0 }
    for channel in channels { registry.register(channel, isRefused: false) }
    let refusal = RPCError(code: .unavailable, message: "too many clients", retryAfterMillis: 60_000)
    let refused = EmbeddedChannel(
      handler: ServerConnectionHandler(router: RPCRouter(), configuration: .init(), gracePeriod: .seconds(10), refusal: refusal))
    try refused.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 7400)).wait()
    registry.register(refused, isRefused: true)
    registry.shutDown(spreadOver: .zero, reconnectSpread: .seconds(5))
    let (late, _) = try ServerConnectionHandlerTests.channel()
    registry.register(late, isRefused: false)

    let hints = try (channels + [late]).map { try #require(Self.goAway(on: $0).retryAfterMillis) }
    #expect(hints.allSatisfy { $0 <= 5000 })
    #expect(Set(hints).count > 1)  // drawn per connection, not one for all
    #expect(try refused.readOutbound(as: ConnectionElement.self) == .preface(ConnectionPreface()))
    let refusedGoAway = try Self.goAway(on: refused)
    #expect(refusedGoAway.retryAfterMillis == 60_000 && refusedGoAway.message == "too many clients")
    for channel in channels + [late, refused] { _ = try? channel.finish() }
  }
}
