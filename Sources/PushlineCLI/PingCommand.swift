import ArgumentParser
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema

/// `pushline ping HOST:PORT`: checks that a server answers, and how fast.
struct PingCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "ping",
    abstract: "Check a Pushline server: connect, handshake, /pushline.Health/Check, PING.",
    discussion: "Prints the round-trip times; exits with status 1 if the server does not answer SERVING in time."
  )

  @Argument(help: "The server, as HOST:PORT.")
  var address: String

  @Option(help: "Seconds to wait for the whole check (at most a year).")
  var timeout = 5.0

  func validate() throws {
    guard ServerAddress(address) != nil else { throw ValidationError("expected HOST:PORT, got '\(address)'") }
    guard timeout > 0, timeout <= Double(SecondsLimit.maximum) else {
      throw ValidationError("--timeout must be positive and at most \(SecondsLimit.description), not \(timeout)")
    }
  }

  func run() async throws {
    let server = ServerAddress(address)!
    print(try await Self.check(host: server.host, port: server.port, timeout: .milliseconds(Int(timeout * 1_000))))
  }

  /// Runs the check and describes it in one line, or throws `CommandFailure` saying why not.
  static func check(host: String, port: Int, timeout: Duration) async throws -> String {
    let clock = ContinuousClock()
    let started = clock.now
    do {
      return try await withThrowingTaskGroup(of: String.self) { group in
        group.addTask {
          // Connecting, the handshake and a silent server are held to the timeout too: a task
          // cannot cancel a connection attempt, and the group waits for its tasks.
          let keepalive = RPCClient.Keepalive(interval: timeout / 2, timeout: timeout)
          return try await RPCClient.withConnection(host: host, port: port, keepalive: keepalive) { connection in
            let connected = clock.now
            let health = try await connection.unary(HealthService.checkMethod, request: HealthCheckRequest(), response: HealthCheckResponse.self)
            let checked = clock.now
            try await connection.ping()
            let pinged = clock.now
            guard health.status == .serving else {
              throw CommandFailure("\(host):\(port) answers \(health.status.name)")
            }
            // The health check goes out with the ClientHello: its time includes the handshake's.
            return "\(host):\(port) SERVING: connect \(Self.format(connected - started)), "
              + "handshake + health check \(Self.format(checked - connected)), ping \(Self.format(pinged - checked))"
          }
        }
        group.addTask {
          try await Task.sleep(for: timeout)
          throw CommandFailure("\(host):\(port) did not answer within \(timeout)")
        }
        defer { group.cancelAll() }
        return try await group.next()!
      }
    } catch let error as RPCError {
      throw CommandFailure("\(host):\(port): \(error)")
    }
  }

  /// A duration as people read it: `0.31 ms`, `12 ms`.
  static func format(_ duration: Duration) -> String {
    let (seconds, attoseconds) = duration.components
    let milliseconds = Double(seconds) * 1_000 + Double(attoseconds) / 1e15
    return milliseconds < 10 ? "\((milliseconds * 100).rounded() / 100) ms" : "\(Int(milliseconds.rounded())) ms"
  }
}
