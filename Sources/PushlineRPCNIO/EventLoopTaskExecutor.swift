import NIOCore

/// Runs tasks on one NIO event loop: the executor preference of a connection's call handlers.
///
/// A handler task that prefers this executor runs its nonisolated code on the connection's
/// event loop, so writing a response is a plain call on the loop — no thread hop and no
/// enqueue per message. Code isolated to an actor still runs on that actor and comes back
/// here afterwards.
///
/// Each job enqueued costs one `EventLoop.execute`: one when a task starts and one each time
/// it resumes after a suspension, never one per message written.
final class EventLoopTaskExecutor: TaskExecutor {
  private let eventLoop: any EventLoop

  /// An executor running its jobs on `eventLoop`.
  init(_ eventLoop: any EventLoop) {
    self.eventLoop = eventLoop
  }

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
  }
}
