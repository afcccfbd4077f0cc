import Dispatch
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// SIGINT and SIGTERM as something to await, for the commands that run until stopped
/// (`demo`, `watch`; `serve` has its service group).
enum TerminationSignal {
  /// Whether a listener's first signal has come.
  private final class FirstSignal: Sendable {
    let isTaken = Atomic(false)
  }

  /// The sources of listeners whose first signal came: they stay for the rest of the process,
  /// to end it on the second. Only appended to, under ``armedLock``; libdispatch runs them.
  nonisolated(unsafe) private static var armed: [any DispatchSourceSignal] = []
  private static let armedLock = Mutex(())

  /// Returns when the process receives SIGINT or SIGTERM (or the task is cancelled); from
  /// then on the next of those signals ends the process as its default action would, so a
  /// second Ctrl-C stops a command whose shutdown hangs.
  ///
  /// The second signal is taken the way the first was, then raised again in a thread that
  /// does not block it: libdispatch reads signals through a descriptor, for which it blocks
  /// them in its threads, so a signal left to its default disposition could stay pending
  /// forever.
  ///
  /// - Parameter whenListening: called once, on a dispatch queue, when both signals are
  ///   caught: a signal sent earlier may be ignored (tests wait for this before they signal).
  static func received(whenListening: @escaping @Sendable () -> Void = {}) async {
    let (signals, continuation) = AsyncStream<Int32>.makeStream()
    let first = FirstSignal()
    let registered = DispatchGroup()
    let sources = [SIGINT, SIGTERM].map { number in
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number)
      source.setEventHandler {
        if first.isTaken.exchange(true, ordering: .relaxed) { end(by: number) }
        continuation.yield(number)
      }
      registered.enter()
      source.setRegistrationHandler { registered.leave() }
      source.resume()
      return source
    }
    registered.notify(queue: .global(), execute: whenListening)
    var iterator = signals.makeAsyncIterator()
    guard await iterator.next() != nil else {
      // Cancelled before any signal: the signals act as by default again.
      sources.forEach { $0.cancel() }
      for number in [SIGINT, SIGTERM] { signal(number, SIG_DFL) }
      return
    }
    armedLock.withLock { _ in armed += sources }
  }

  /// Ends the process by signal `number`, as its default action does.
  private static func end(by number: Int32) -> Never {
    signal(number, SIG_DFL)
    var unblocked = sigset_t()
    sigemptyset(&unblocked)
    sigaddset(&unblocked, number)
    pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
    raise(number)
    _exit(128 + number)  // As a shell reports a death by signal, should the raise not end it.
  }
}
