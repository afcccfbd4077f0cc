import Testing

@testable import PushlineCLI

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// `demo` and `watch` stop on the first SIGINT or SIGTERM; the second must find the signals'
/// default disposition again, so that it ends a command whose shutdown hangs.
@Suite("Termination signals")
struct TerminationSignalTests {
  /// SIGTERM to this very process, sent only once it is surely caught (else it would end the
  /// test run); afterwards both signals are back to their default, checked with `sigaction`
  /// rather than by a second signal. As in `demo`, libdispatch leaves SIGTERM blocked in the
  /// thread that took it; the `pushline serve` children other tests start from such a thread
  /// still stop on SIGTERM, since their service groups read it through libdispatch too.
  @Test func theFirstSignalRestoresTheDefaultDisposition() async throws {
    let (listening, listen) = AsyncStream<Void>.makeStream()
    let received = Task { await TerminationSignal.received(whenListening: { listen.finish() }) }
    for await _ in listening {}
    try #require(!Self.actsByDefault(SIGTERM) && !Self.actsByDefault(SIGINT), "SIGTERM would end the test run")
    kill(getpid(), SIGTERM)
    await received.value
    #expect(Self.actsByDefault(SIGTERM) && Self.actsByDefault(SIGINT))
  }

  /// Whether signal `number` has its default disposition (SIG_DFL), neither ignored nor caught.
  static func actsByDefault(_ number: Int32) -> Bool {
    var action = sigaction()
    sigaction(number, nil, &action)
    #if canImport(Glibc)
      return action.__sigaction_handler.sa_handler == nil
    #else
      return action.__sigaction_u.__sa_handler == nil
    #endif
  }
}
