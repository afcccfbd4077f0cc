import ArgumentParser
import Foundation

/// `pushline-bench rpc-server`: one implementation's benchmark server in its own process; prints
/// `PORT n`, serves until its standard input closes.
struct RPCBenchmarkServer: AsyncParsableCommand {
  static let configuration = CommandConfiguration(commandName: "rpc-server", shouldDisplay: false)

  @Option var implementation: String

  func run() async throws {
    AllocationCounter.execWithoutInterposer()  // the linked malloc-interposer would tax every allocation
    try await RPCBenchmarkPeers.serve(implementation, reportPort: { port in
      FileHandle.standardOutput.write(Data("PORT \(port)\n".utf8))
    }, until: {
      await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        Thread.detachNewThread {
          while readLine() != nil {}
          done.resume()
        }
      }
    })
  }
}

/// `pushline-bench rpc`: Pushline RPC against grpc-swift-2 (HTTP/2) on the same calls, each
/// server in its own process, the client in this one, the implementations taking turns phase by
/// phase (latency, throughput, then each stream).
struct RPCBenchmark: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "rpc",
    abstract: "Pushline RPC vs grpc-swift-2: unary latency and throughput, streaming rate, server memory."
  )

  @Option(help: "Sequential unary calls timed for the latency percentiles.")
  var latencyCalls = 5_000

  @Option(help: "Unary calls made by 64 concurrent callers for the throughput.")
  var throughputCalls = 40_000

  @Option(help: "Messages per stream; three streams are run back to back.")
  var streamMessages = 300_000

  struct Server {
    var process: Process
    var input: Pipe
    var port: Int

    /// CPU time the server process has used (user + system), from /proc.
    var cpuSeconds: Double {
      let stat = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8)) ?? ""
      // Fields after the command name, which is in parentheses: utime and stime are 14th and 15th overall.
      guard let close = stat.lastIndex(of: ")") else { return 0 }
      let fields = stat[stat.index(after: close)...].split(separator: " ")
      guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
      return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    var residentKiB: Int {
      let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
      let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
      return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
  }

  func run() async throws {
    AllocationCounter.execWithoutInterposer()  // the linked malloc-interposer would tax every allocation
    let implementations = ["pushline", "grpc-swift-2"]
    var servers: [String: Server] = [:]
    for implementation in implementations { servers[implementation] = try startServer(implementation) }
    defer { for server in servers.values { server.input.fileHandleForWriting.closeFile() } }

    // Both clients stay connected and the implementations take turns phase by phase (stream by
    // stream), so that load from elsewhere on the machine falls on both alike.
    var rows: [String: [String]] = [:]
    var cpuNotes: [String] = []
    try await RPCBenchmarkPeers.withClient(implementations[0], port: servers[implementations[0]]!.port) { first in
      try await RPCBenchmarkPeers.withClient(implementations[1], port: servers[implementations[1]]!.port) { second in
        let clients = [implementations[0]: first, implementations[1]: second]
        let clock = ContinuousClock()
        var latencies: [String: [Duration]] = [:], callsPerSecond: [String: Double] = [:]
        for implementation in implementations {
          let client = clients[implementation]!
          for _ in 0..<500 { try await client.unary() }  // Warm up.
          var sample: [Duration] = []
          sample.reserveCapacity(latencyCalls)
          for _ in 0..<latencyCalls {
            let start = clock.now
            try await client.unary()
            sample.append(clock.now - start)
          }
          latencies[implementation] = sample.sorted()
        }
        let perCaller = throughputCalls / 64
        for implementation in implementations {
          let client = clients[implementation]!
          let throughputStart = clock.now
          try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<64 {
              group.addTask { for _ in 0..<perCaller { try await client.unary() } }
            }
            try await group.waitForAll()
          }
          callsPerSecond[implementation] = Double(perCaller * 64) / Self.seconds(clock.now - throughputStart)
        }
        var streamRates: [String: [String]] = [:], memory: [String: [String]] = [:]
        var serverCPU: [String: Double] = [:], clientCPU: [String: Double] = [:]
        for implementation in implementations { memory[implementation] = ["\(servers[implementation]!.residentKiB / 1_024) MiB"] }
        for _ in 0..<3 {
          for implementation in implementations {
            let start = clock.now
            let (serverBefore, clientBefore) = (servers[implementation]!.cpuSeconds, Self.processCPUSeconds())
            let received = try await clients[implementation]!.stream(streamMessages)
            precondition(received == streamMessages, "\(implementation) delivered \(received) of \(streamMessages)")
            streamRates[implementation, default: []].append(Self.rate(Double(received) / Self.seconds(clock.now - start)))
            serverCPU[implementation, default: 0] += servers[implementation]!.cpuSeconds - serverBefore
            clientCPU[implementation, default: 0] += Self.processCPUSeconds() - clientBefore
            memory[implementation]!.append("\(servers[implementation]!.residentKiB / 1_024) MiB")
          }
        }
        let perMessage = Double(3 * streamMessages) / 1e6
        for implementation in implementations {
          let sorted = latencies[implementation]!
          cpuNotes.append(String(
            format: "%@ streaming CPU per message: server %.2f µs, client %.2f µs", implementation,
            serverCPU[implementation]! / perMessage, clientCPU[implementation]! / perMessage))
          rows[implementation] = [
            implementation, Self.milliseconds(sorted[sorted.count / 2]), Self.milliseconds(sorted[sorted.count * 99 / 100]),
            Self.rate(callsPerSecond[implementation]!), streamRates[implementation]!.joined(separator: " / "),
            memory[implementation]!.joined(separator: " → "),
          ]
        }
      }
    }
    print("rpc benchmark: loopback, servers in their own processes, 200-byte messages; release build")
    print("unary latency over \(latencyCalls) sequential calls; throughput with 64 calls in flight; 3 streams of \(streamMessages) messages")
    print("")
    let header = ["implementation", "unary p50", "unary p99", "unary calls/s", "stream msgs/s (3 runs)", "server RSS: start → after each stream"]
    let table = [header] + implementations.map { rows[$0]! }
    let widths = header.indices.map { column in table.map { $0[column].count }.max()! }
    for line in table { print(zip(line, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  ")) }
    let pushline = rows["pushline"]!, grpc = rows["grpc-swift-2"]!
    print("")
    print("Pushline ÷ grpc-swift-2, unary calls/s: \(Self.ratio(pushline[3], grpc[3]))")
    let streamRatios = zip(pushline[4].split(separator: " / "), grpc[4].split(separator: " / ")).map { Self.ratio(String($0), String($1)) }
    print("Pushline ÷ grpc-swift-2, stream msgs/s: \(streamRatios.joined(separator: " / "))")
    for note in cpuNotes { print(note) }
  }

  private func startServer(_ implementation: String) throws -> Server {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    process.arguments = ["rpc-server", "--implementation", implementation == "pushline" ? "pushline" : "grpc"]
    let input = Pipe(), output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    try process.run()
    var line = Data()
    while !line.contains(UInt8(ascii: "\n")) {
      let chunk = output.fileHandleForReading.availableData
      guard !chunk.isEmpty else { throw ValidationError("\(implementation) server exited before reporting its port") }
      line.append(chunk)
    }
    let text = String(decoding: line, as: UTF8.self)
    guard let port = Int(text.split(separator: "\n")[0].dropFirst("PORT ".count)) else {
      throw ValidationError("unexpected output from the \(implementation) server: \(text)")
    }
    return Server(process: process, input: input, port: port)
  }

  /// CPU time this process has used (user + system).
  static func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
  }

  static func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
  }

  static func milliseconds(_ duration: Duration) -> String { String(format: "%.3f ms", seconds(duration) * 1_000) }

  static func rate(_ value: Double) -> String { value >= 10_000 ? String(format: "%.0fk", value / 1_000) : String(format: "%.0f", value) }

  static func ratio(_ a: String, _ b: String) -> String {
    func value(_ text: String) -> Double { text.hasSuffix("k") ? Double(text.dropLast())! * 1_000 : Double(text)! }
    return String(format: "%.2f×", value(a) / value(b))
  }
}
