import CoreMetrics
import Dispatch
import Synchronization

/// A metrics factory whose gauges (recorders) hold their first record back — as a thread
/// descheduled between computing a value and recording it — until a later record has taken
/// effect, or for a second when none comes (none can while the first holds a lock the later
/// one needs). Counters and timers record nothing.
final class OvertakenGauge: MetricsFactory, RecorderHandler {
  /// Signalled when the first record begins to wait.
  let firstIsWaiting = DispatchSemaphore(value: 0)
  private let laterRecorded = DispatchSemaphore(value: 0)
  private let state = Mutex((records: 0, value: 0.0))

  /// The value recorded last, as a metrics backend would show it.
  var value: Double { state.withLock { $0.value } }

  func record(_ value: Int64) {
    record(Double(value))
  }

  func record(_ value: Double) {
    let isFirst = state.withLock { state in
      state.records += 1
      return state.records == 1
    }
    guard isFirst else {
      state.withLock { $0.value = value }
      laterRecorded.signal()
      return
    }
    firstIsWaiting.signal()
    _ = laterRecorded.wait(timeout: .now() + .seconds(1))
    state.withLock { $0.value = value }
  }

  func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler { self }
  func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler { NOOPMetricsHandler.instance }
  func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler { NOOPMetricsHandler.instance }
  func destroyCounter(_ handler: any CounterHandler) {}
  func destroyRecorder(_ handler: any RecorderHandler) {}
  func destroyTimer(_ handler: any TimerHandler) {}
}
