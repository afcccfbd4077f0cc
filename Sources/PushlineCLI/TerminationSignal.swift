import Dispatch

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// SIGINT and SIGTERM as something to await, for the commands that run until stopped
/// (`demo`, `watch`; `serve` has its service group).
enum TerminationSignal {
  /// Returns when the process receives SIGINT or SIGTERM (or the task is cancelled); from
  /// then on the signals act as by default again, so a second Ctrl-C stops a command whose
  /// shutdown hangs.
  ///
  /// - Parameter whenListening: called once, on a dispatch queue, when both signals are
  ///   caught: a signal sent earlier may be ignored (tests wait for this before they signal).
  static func received(whenListening: @escaping @Sendable () -> Void = {}) async {
    let (signals, continuation) = AsyncStream<Int32>.makeStream()
    let registered = DispatchGroup()
    let sources = [SIGINT, SIGTERM].map { number in
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number)
      source.setEventHandler { continuation.yield(number) }
      registered.enter()
      source.setRegistrationHandler { registered.leave() }
      source.resume()
      return source
    }
    registered.notify(queue: .global(), execute: whenListening)
    var iterator = signals.makeAsyncIterator()
    _ = await iterator.next()
    sources.forEach { $0.cancel() }
    for number in [SIGINT, SIGTERM] { signal(number, SIG_DFL) }
  }
}
