import ArgumentParser
import Dispatch
import NIOCore
import PushlineRPC
import PushlineRPCNIO

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `pushline serve`: runs a Pushline RPC server until SIGINT or SIGTERM.
struct ServeCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "serve",
    abstract: "Run a Pushline server on a listen address.",
    discussion: """
      Serves /pushline.Health/Check (the broker's services join it in a later version). \
      Listens on loopback unless told otherwise. Stops on SIGINT or SIGTERM.
      """
  )

  @Option(help: "The address to listen on.")
  var host = "127.0.0.1"

  @Option(help: "The port to listen on; 0 picks a free one (printed on start).")
  var port = 7400

  func validate() throws {
    guard (0...65_535).contains(port) else { throw ValidationError("--port must be 0…65535") }
  }

  func run() async throws {
    let server = RPCServer(router: RPCRouter(), configuration: .init(host: host, port: port))
    do {
      try await server.withRunningServer { address in
        print("pushline: serving on \(host):\(address.port ?? port)")
        await Self.terminationSignal()
        print("pushline: stopping")
      }
    } catch let error as RPCError {
      throw CommandFailure("\(error)")
    }
  }

  /// Returns when the process receives SIGINT or SIGTERM.
  static func terminationSignal() async {
    let (signals, continuation) = AsyncStream<Int32>.makeStream()
    let sources = [SIGINT, SIGTERM].map { number in
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number)
      source.setEventHandler { continuation.yield(number) }
      source.resume()
      return source
    }
    var iterator = signals.makeAsyncIterator()
    _ = await iterator.next()
    sources.forEach { $0.cancel() }
  }
}
