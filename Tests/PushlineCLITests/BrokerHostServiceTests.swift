import NIOCore
import PushlineBroker
import PushlineRPC
import ServiceLifecycleTestKit
import Synchronization
import Testing

@testable import PushlineCLI
@testable import PushlineRPCNIO

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

  /// A graceful shutdown cut short — the service group cancels what still runs once its
  /// deadline passes — ends in a `CancellationError`, not a normal return: the group then
  /// fails, and `serve` exits with a failure status, since connections were cut off. Two
  /// clients stay connected, and the lame-duck period is long, so the second one's GOAWAY is
  /// still to come when the task is cancelled from `onStopping`, during the shutdown.
  @Test(.timeLimit(.minutes(1))) func aGracefulShutdownCutShortThrowsCancellationError() async throws {
    var brokerHost = BrokerHost(
      storage: InMemoryBrokerStorage(), configuration: BrokerConfiguration(),
      secret: Array("0123456789abcdef0123456789abcdef".utf8), host: "127.0.0.1", port: 0)
    brokerHost.lameDuckPeriod = .seconds(600)
    let (serving, reportServing) = AsyncStream<(port: Int, trigger: GracefulShutdownTestTrigger)>.makeStream()
    let running = Task {
      try await testGracefulShutdown { trigger in
        let service = BrokerHostService(
          brokerHost: brokerHost, onServing: { reportServing.yield(($0.port!, trigger)) },
          onStopping: { withUnsafeCurrentTask { $0?.cancel() } })
        try await service.run()
      }
    }
    var servingIterator = serving.makeAsyncIterator()
    let (port, trigger) = try #require(await servingIterator.next())
    try await RPCClient.withConnection(host: "127.0.0.1", port: port) { first in
      _ = try await first.handshake()
      try await RPCClient.withConnection(host: "127.0.0.1", port: port) { second in
        _ = try await second.handshake()
        trigger.triggerGracefulShutdown()
        await #expect(throws: CancellationError.self) { try await running.value }
      }
    }
  }

  /// A graceful shutdown whose deadline passes once every connection has gone cut nothing
  /// short: the service returns, as from any graceful shutdown, and `serve` exits 0. (No client
  /// connects, and the task is cancelled from `onStopping`.)
  @Test func aDeadlineThatFindsNothingOpenCutsNothingShort() async throws {
    let events = Mutex<[String]>([])
    let brokerHost = BrokerHost(
      storage: InMemoryBrokerStorage(), configuration: BrokerConfiguration(),
      secret: Array("0123456789abcdef0123456789abcdef".utf8), host: "127.0.0.1", port: 0)
    let running = Task {
      try await testGracefulShutdown { trigger in
        let service = BrokerHostService(
          brokerHost: brokerHost,
          onServing: { _ in trigger.triggerGracefulShutdown() },
          onStopping: {
            events.withLock { $0.append("stopping") }
            withUnsafeCurrentTask { $0?.cancel() }
          })
        try await service.run()
      }
    }
    try await running.value
    #expect(events.withLock { $0 } == ["stopping"])
  }

  /// ServiceLifecycle logs each service's description at `debug`: it names the address and
  /// not the token secret.
  @Test func theServiceDescribesItselfWithoutTheSecret() {
    let secret = Array("0123456789abcdef0123456789abcdef".utf8)
    let service = BrokerHostService(
      brokerHost: BrokerHost(storage: InMemoryBrokerStorage(), configuration: BrokerConfiguration(), secret: secret, host: "127.0.0.1", port: 7400),
      onServing: { _ in }, onStopping: {})
    #expect("\(service)" == "BrokerHostService(127.0.0.1:7400)")
    #expect(!"\(service)".contains("\(secret)") && !"\(service)".contains("0123456789abcdef"))
  }

  /// A publisher may keep thousands of publishes in flight on one connection: the broker
  /// announces its own concurrent-call limit, not the protocol's default of 100.
  @Test func theBrokerAnnouncesItsConcurrentCallLimit() async throws {
    let brokerHost = BrokerHost(
      storage: InMemoryBrokerStorage(), configuration: BrokerConfiguration(),
      secret: Array("0123456789abcdef0123456789abcdef".utf8), host: "127.0.0.1", port: 0)
    let before = WallClock.systemMillis()
    let server = try await brokerHost.run { running in
      var configuration = ClientConnectionStateMachine.Configuration(compressions: [])
      configuration.limits.maxConcurrentCalls = 100_000
      return try await RPCClient.withConnection(host: "127.0.0.1", port: running.address.port!, configuration: configuration) {
        try await $0.handshake()
      }
    }
    // The handshake tells the client the server's clock, for it to correct its own.
    #expect((before...WallClock.systemMillis()).contains(server.serverTimeMillis ?? 0))
    let agreed = server.limits
    #expect(agreed == BrokerService.connectionLimits)
    #expect(agreed.maxConcurrentCalls == 8_192)
  }
}
