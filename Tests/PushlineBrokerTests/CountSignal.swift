import Synchronization

/// A count that tasks wait on: ``wait(until:)`` returns once ``count(_:)`` has reported at
/// least the number asked for — an explicit signal between the code under test and the test,
/// where a loop of `Task.yield()` would spin, and hang rather than fail on a regression.
final class CountSignal: Sendable {
  private struct State {
    var count = 0
    var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
  }

  private let state = Mutex(State())

  /// Reports the count now, waking the waiters it reaches.
  func count(_ count: Int) {
    let reached = state.withLock { state in
      state.count = max(state.count, count)  // reports may arrive out of order: counts only grow
      let reached = state.waiters.filter { $0.count <= state.count }
      state.waiters.removeAll { $0.count <= state.count }
      return reached
    }
    for waiter in reached { waiter.continuation.resume() }
  }

  /// Starts counting again from zero.
  func reset() {
    state.withLock { $0.count = 0 }
  }

  /// Returns once the count is at least `count`.
  func wait(until count: Int) async {
    await withCheckedContinuation { continuation in
      let reached = state.withLock { state in
        guard state.count < count else { return true }
        state.waiters.append((count, continuation))
        return false
      }
      if reached { continuation.resume() }
    }
  }
}
