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
  /// In a process of its own (an exit test: signals are the whole process's, and these must
  /// not reach the other tests): the first signal — SIGTERM, or SIGINT (Ctrl-C) — is taken,
  /// sent only once it is surely caught; the second, the other one, kills the process. Should
  /// a signal be lost, SIGALRM ends the process instead, and the test fails rather than
  /// waiting forever (a time limit cannot stop a process of its own).
  @Test func aSecondSignalEndsTheProcess() async {
    await #expect(processExitsWith: .signal(SIGINT)) {
      await Self.takeTheFirstSignal(SIGTERM)
      Self.die(by: SIGINT)
    }
    await #expect(processExitsWith: .signal(SIGTERM)) {
      await Self.takeTheFirstSignal(SIGINT)
      Self.die(by: SIGTERM)
    }
  }

  /// Sends `number` to this process once ``TerminationSignal/received(whenListening:)``
  /// listens, and returns when it has taken it; SIGALRM ends the process 30 s from now.
  static func takeTheFirstSignal(_ number: Int32) async {
    alarm(30)
    let (listening, listen) = AsyncStream<Void>.makeStream()
    let received = Task { await TerminationSignal.received(whenListening: { listen.finish() }) }
    for await _ in listening {}
    kill(getpid(), number)
    await received.value
  }

  /// Sends `number` to this process and waits for its default action to end it.
  static func die(by number: Int32) -> Never {
    kill(getpid(), number)
    while true { pause() }
  }
}
