import NIOCore
import PushlineBroker
import ServiceLifecycleTestKit
import Synchronization
import Testing

@testable import PushlineCLI

@Suite("The broker as a service")
struct BrokerHostServiceTests {
  /// A shutdown triggered as soon as the broker serves: it says so, stops and returns.
  @Test func aGracefulShutdownStopsTheBrokerAndReturns() async throws {
    let events = Mutex<[String]>([])
    let brokerHost = BrokerHost(
      storage: InMemoryBrokerStorage(), configuration: BrokerConfiguration(),
      secret: Array("0123456789abcdef0123456789abcdef".utf8), host: "127.0.0.1", port: 0)
    try await testGracefulShutdown { trigger in
      let service = BrokerHostService(
        brokerHost: brokerHost,
        onServing: { address in
          events.withLock { $0.append(address.port == 0 ? "serving on port 0" : "serving") }
          trigger.triggerGracefulShutdown()
        },
        onStopping: { events.withLock { $0.append("stopping") } })
      try await service.run()
    }
    #expect(events.withLock { $0 } == ["serving", "stopping"])
  }
}
