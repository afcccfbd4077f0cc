import Foundation
import Synchronization

/// A task executor that runs nothing until told to: a test sees what happens before the jobs
/// enqueued on it run, then runs them (and the jobs they enqueue) on its own thread.
final class QueuedTaskExecutor: TaskExecutor {
  private let jobs = Mutex<[UnownedJob]>([])
  /// The thread running the jobs, while ``runQueuedJobs()`` runs.
  private let runner = Mutex<Thread?>(nil)

  /// How many jobs wait to run.
  var queuedCount: Int { jobs.withLock { $0.count } }

  /// Whether the calling code runs as one of this executor's jobs.
  var isRunningTheCaller: Bool { runner.withLock { $0 === Thread.current } }

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    jobs.withLock { $0.append(job) }
  }

  /// Runs the queued jobs, and those they enqueue, until none is left.
  func runQueuedJobs() {
    runner.withLock { $0 = Thread.current }
    defer { runner.withLock { $0 = nil } }
    while let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
      job.runSynchronously(on: asUnownedTaskExecutor())
    }
  }
}
