import Testing

@testable import PushlineCLI

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `demo` and `watch` stop on the first SIGINT or SIGTERM; the second must end the process as
/// by default, so that it ends a command whose shutdown hangs.
@Suite("Termination signals")
struct TerminationSignalTests {
  /// In a process of its own (an exit test: signals are the whole process's, and this one
  /// must not reach the other tests): the first SIGTERM is taken, sent only once it is surely
  /// caught; the second kills the process. Should a signal be lost, SIGALRM ends the process
  /// instead, and the test fails rather than waiting forever (a time limit cannot stop a
  /// process of its own).
  @Test func theSecondSignalEndsTheProcess() async {
    await #expect(processExitsWith: .signal(SIGTERM)) {
      alarm(30)
      let (listening, listen) = AsyncStream<Void>.makeStream()
      let received = Task { await TerminationSignal.received(whenListening: { listen.finish() }) }
      for await _ in listening {}
      kill(getpid(), SIGTERM)
      await received.value
      kill(getpid(), SIGTERM)
      while true { pause() }  // until the signal's default action ends the process
    }
  }
}
