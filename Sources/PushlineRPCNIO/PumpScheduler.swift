import NIOCore

/// Where a loop's woken pumps wait for their pull: one mailbox per event loop, shared by its
/// connections, so that a fan-out waking many streams of a loop costs it one job.
typealias PumpScheduler = LoopMailbox<CallPump>

extension LoopMailbox where Item == CallPump {
  /// The pump scheduler of `eventLoop`: it pulls the pumps woken since its last job, in the
  /// order they were woken.
  static func pumps(on eventLoop: any EventLoop) -> PumpScheduler {
    PumpScheduler(eventLoop: eventLoop) { pumps in
      for pump in pumps { pump.pull() }
    }
  }
}
