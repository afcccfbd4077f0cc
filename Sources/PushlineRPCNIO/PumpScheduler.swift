import NIOCore
import Synchronization

/// Runs the pulls of one event loop's woken pumps together, in the order they were woken: a
/// fan-out that wakes a thousand streams of one loop costs that loop a few jobs (and at most
/// one wake-up), not a thousand.
///
/// Each job pulls at most ``pullsPerJob`` pumps and leaves the rest to the next, behind the
/// loop's I/O, so that a long fan-out never holds up the loop's reads (publishes arriving,
/// answers leaving). Under load this batches by itself: a stream waiting its turn gathers
/// more updates, which then leave in one write — a backlog costs fewer system calls per
/// update, not more, while an idle loop still pulls each stream at once. A pump woken again
/// while waiting keeps its place; one woken after its pull goes to the back.
final class PumpScheduler: Sendable {
  /// How many pumps one job pulls before the loop gets to its I/O again.
  static let pullsPerJob = 64

  private struct Pending {
    var pumps: [CallPump] = []
    var isScheduled = false
  }

  /// The loop the pulls run on.
  let eventLoop: any EventLoop
  private let pending = Mutex(Pending())

  /// A scheduler for the pumps of `eventLoop`'s connections.
  init(eventLoop: any EventLoop) {
    self.eventLoop = eventLoop
  }

  /// Pulls `pump` on the loop soon, with the others woken meanwhile.
  func schedule(_ pump: CallPump) {
    let schedules = pending.withLock { pending in
      pending.pumps.append(pump)
      defer { pending.isScheduled = true }
      return !pending.isScheduled
    }
    guard schedules else { return }
    eventLoop.execute { self.pullAll() }
  }

  private func pullAll() {
    let (pumps, hasMore) = pending.withLock { pending in
      let count = min(pending.pumps.count, Self.pullsPerJob)
      let pumps = Array(pending.pumps[..<count])
      pending.pumps.removeFirst(count)
      pending.isScheduled = !pending.pumps.isEmpty
      return (pumps, pending.isScheduled)
    }
    for pump in pumps { pump.pull() }
    if hasMore { eventLoop.execute { self.pullAll() } }
  }
}
