import Dispatch
import NIOCore
import NIOEmbedded
@testable import PushlineRPCNIO
import Testing

@Suite("Connection registry")
struct ConnectionRegistryTests {
  /// Two connections registered at the same time, the first one's count recorded late (its
  /// thread descheduled): the gauge still ends at two, as each count is recorded under the
  /// registry's lock, in the order the counts changed.
  @Test(.timeLimit(.minutes(1))) func theOpenGaugeEndsAtTheCountWhenRegistrationsCross() async throws {
    let gauge = OvertakenGauge()
    let registry = ConnectionRegistry(metrics: gauge)
    let channels = [NIOAsyncTestingChannel(), NIOAsyncTestingChannel()]
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
      DispatchQueue.global().async {
        let first = DispatchGroup()
        DispatchQueue.global().async(group: first) { registry.register(channels[0], isRefused: false) }
        gauge.firstIsWaiting.wait()
        registry.register(channels[1], isRefused: false)
        first.wait()
        done.resume()
      }
    }
    #expect(gauge.value == 2)
    for channel in channels { try await channel.close() }
    #expect(gauge.value == 0)
  }
}
