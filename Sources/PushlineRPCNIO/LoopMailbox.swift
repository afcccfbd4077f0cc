import NIOCore
import Synchronization

/// Items posted from any thread to one event loop and handed over there in batches: whatever
/// is posted while the loop is busy arrives in one job, in the order posted, and costs the
/// loop at most one wake-up — a commit that completes sixty calls, or a fan-out that wakes a
/// thousand streams, costs the loop one job, not sixty or a thousand.
///
/// Items posted while a batch is being handled go to the next job, which NIO runs in the same
/// turn of the loop, after the jobs queued before it.
final class LoopMailbox<Item: Sendable>: Sendable {
  private struct Pending {
    var items: [Item] = []
    var isScheduled = false
  }

  /// The loop the items are handled on.
  let eventLoop: any EventLoop
  private let pending = Mutex(Pending())
  private let handle: @Sendable ([Item]) -> Void

  /// A mailbox whose items `handle` takes, a batch at a time, on `eventLoop`.
  init(eventLoop: any EventLoop, handle: @escaping @Sendable ([Item]) -> Void) {
    self.eventLoop = eventLoop
    self.handle = handle
  }

  /// Hands `item` to the loop, with the others posted meanwhile.
  func post(_ item: Item) {
    let schedules = pending.withLock { pending in
      pending.items.append(item)
      defer { pending.isScheduled = true }
      return !pending.isScheduled
    }
    guard schedules else { return }
    eventLoop.execute { self.handlePending() }
  }

  private func handlePending() {
    let items = pending.withLock { pending in
      pending.isScheduled = false
      defer { pending.items = [] }
      return pending.items
    }
    handle(items)
  }
}
