import ArgumentParser
import CoreMetrics
import Foundation
import NIOCore
import Prometheus
import PushlineBroker
import PushlineCLI
import PushlineRPC
import PushlineRPCNIO

/// `pushline-bench broker-server`: one broker in a child process — Pushline's (as
/// `pushline serve` builds it: `Broker`, `TokenAuthority`, `BrokerService` on an `RPCServer`
/// with default settings and the broker's connection limits), nats-server (started as this
/// process's own child, with its defaults), or the bare SwiftNIO reference (`BareFanOutServer`). Prints `PORT p PID pid` (the pid whose memory and CPU to read), then serves until
/// its standard input closes or its parent dies. With `--metrics`, a Pushline broker also
/// serves `GET /metrics` as `pushline serve --metrics-port` does, and the line ends `METRICS m`.
struct BrokerBenchmarkServer: AsyncParsableCommand {
  static let configuration = CommandConfiguration(commandName: "broker-server", shouldDisplay: false)

  enum Implementation: String, ExpressibleByArgument { case memory, sqlite, nats, nio }

  @Option var implementation: Implementation
  @Option(help: "SQLite's data directory.") var dataDir = ""
  @Option(help: "The nats-server executable.") var natsServer = "nats-server"
  @Flag(help: "Count Pushline's allocations; print MALLOCS n when standard input closes.") var countAllocations = false
  @Option(help: "New subscriptions admitted per second; 0 for no limit.") var maxSubscribesPerSecond = 0
  @Flag(help: "Serve the broker's Prometheus metrics on a free loopback port (Pushline only).") var metrics = false

  func run() async throws {
    if countAllocations, implementation == .memory || implementation == .sqlite {
      guard AllocationCounter.startCountingForLife() else {
        throw ValidationError("allocations cannot be counted: \(AllocationCounter.manualCommand)")
      }
    } else {
      AllocationCounter.execWithoutInterposer()
    }
    ProcessStats.raiseFileLimit()
    switch implementation {
    case .nats: try runNATS()
    case .nio:
      ProcessStats.exitWhenOrphaned()
      try BareFanOutServer.run()
    case .memory, .sqlite: try await runPushline()
    }
  }

  private func runPushline() async throws {
    ProcessStats.exitWhenOrphaned()
    guard let hex = ProcessInfo.processInfo.environment["PUSHLINE_TOKEN_SECRET"], let secret = Self.bytes(hex: hex) else {
      throw ValidationError("PUSHLINE_TOKEN_SECRET must hold the token secret in hex")
    }
    // Bootstrapped before the broker and server are made: they take the factory when made.
    var metricsSuffix = ""
    if metrics {
      let registry = PrometheusCollectorRegistry()
      MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
      let endpoint = try await MetricsEndpoint.bind(host: "127.0.0.1", port: 0, registry: registry)  // open until exit
      metricsSuffix = " METRICS \(endpoint.localAddress?.port ?? 0)"
    }
    // One subscriber token serves every subscriber: no per-subject limit (nats-server has none).
    let configuration = BrokerConfiguration(maxSubscriptionsPerSubject: 0, maxSubscribesPerSecond: maxSubscribesPerSecond)
    let storage: any BrokerStorage = implementation == .memory ? InMemoryBrokerStorage() : try SQLiteBrokerStorage(directory: dataDir)
    let broker = try await Broker(storage: storage, configuration: configuration)
    let authority = try await TokenAuthority(secret: secret, nowMillis: configuration.nowMillis)
    var router = RPCRouter()
    BrokerService.register(broker, authority: authority, in: &router)
    let connection = ServerConnectionStateMachine.Configuration(limits: BrokerService.connectionLimits)
    try await RPCServer(router: router, configuration: .init(port: 0, connection: connection)).withRunningServer { address in
      await withDiscardingTaskGroup { group in
        group.addTask { await broker.run() }
        FileHandle.standardOutput.write(Data("PORT \(address.port!) PID \(getpid())\(metricsSuffix)\n".utf8))
        await Self.standardInputClosed()
        if countAllocations { FileHandle.standardOutput.write(Data("MALLOCS \(AllocationCounter.countedForLife)\n".utf8)) }
        _exit(0)  // no graceful shutdown: the benchmark is over
      }
    }
  }

  private func runNATS() throws {
    let port = try Self.freePort()
    let process = Process()
    process.executableURL = URL(fileURLWithPath: natsServer.contains("/") ? natsServer : "/usr/sbin/\(natsServer)")
    process.arguments = ["-a", "127.0.0.1", "-p", "\(port)"]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    let pid = process.processIdentifier
    ProcessStats.exitWhenOrphaned { kill(pid, SIGKILL) }
    let deadline = Date().addingTimeInterval(15)
    while !Self.accepts(port: port) {
      guard process.isRunning, Date() < deadline else {
        kill(pid, SIGKILL)
        throw ValidationError("nats-server did not start listening on port \(port)")
      }
      usleep(20_000)
    }
    FileHandle.standardOutput.write(Data("PORT \(port) PID \(pid)\n".utf8))
    while readLine() != nil {}
    kill(pid, SIGKILL)
    process.waitUntilExit()
  }

  /// Returns when standard input reaches its end (the parent closed it or died).
  static func standardInputClosed() async {
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
      Thread.detachNewThread {
        while readLine() != nil {}
        done.resume()
      }
    }
  }

  static func bytes(hex: String) -> [UInt8]? {
    let digits = Array(hex.utf8)
    guard digits.count % 2 == 0 else { return nil }
    return stride(from: 0, to: digits.count, by: 2).compactMap { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16) }
  }

  /// A loopback port nobody listens on (bound to port 0, read, released).
  static func freePort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard bound else { throw ValidationError("cannot find a free port") }
    return Int(UInt16(bigEndian: address.sin_port))
  }

  /// Whether something accepts TCP connections on the loopback port.
  static func accepts(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return withUnsafePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
  }
}
