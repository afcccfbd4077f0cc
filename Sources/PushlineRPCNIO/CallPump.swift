import NIOCore
import PushlineRPC
import PushlineSchema
import Synchronization

/// The transport's end of a ``ResponseSource``: when woken, it pulls a stream's responses on
/// the connection's event loop and writes them while the channel takes bytes, all of one pull
/// in one flush — no task switch or suspension per response.
///
/// When the channel's buffer fills, the pump stops pulling and the connection wakes it again
/// once the channel is writable: a slow reader leaves the responses in the source (where the
/// broker coalesces them), not in the server's memory.
final class CallPump: ResponsePump {
  private let connection: NIOLoopBound<ServerConnectionHandler>
  private let callID: UInt32
  private let compresses: Bool
  private let source: any ResponseSource
  private let scheduler: PumpScheduler
  /// A pull is scheduled on the loop and has not begun: later wakes are merged into it.
  private let isScheduled = Atomic<Bool>(false)
  /// The call is over: a pull already queued asks the source for nothing more.
  private let isOver = Atomic<Bool>(false)
  /// Whether the source was last told that the connection takes bytes (changed on the loop).
  private let toldWritable = Atomic<Bool>(false)
  /// The connection is going away and the source has not been pulled since: the next pull
  /// happens even if the channel is full, so that a stream ending at the GOAWAY ends then,
  /// not when a client that reads nothing makes room (or after the grace period).
  private let pullsDespiteFullChannel = Atomic<Bool>(false)

  /// A pump of `source`'s responses for the call `callID`, pulled through `scheduler` (on the
  /// connection's event loop).
  init(
    connection: NIOLoopBound<ServerConnectionHandler>, callID: UInt32, compresses: Bool, source: any ResponseSource,
    scheduler: PumpScheduler
  ) {
    self.connection = connection
    self.callID = callID
    self.compresses = compresses
    self.source = source
    self.scheduler = scheduler
  }

  func wake() {
    guard !isScheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
    scheduler.post(self)
  }

  /// Tells the source that the connection is going away, then pulls, so that the source can
  /// end the stream (on the loop).
  func connectionIsGoingAway() {
    source.connectionIsGoingAway()
    pullsDespiteFullChannel.store(true, ordering: .releasing)
    wake()
  }

  /// Tells the source that the call is over (on the loop), once.
  func streamEnded() {
    guard !isOver.exchange(true, ordering: .acquiringAndReleasing) else { return }
    source.streamEnded()
  }

  /// Pulls now if the source has something (on the loop), whether or not a pull is scheduled:
  /// for a connection that sends a stream's responses ahead of its answers.
  func pullIfReady() {
    guard !isOver.load(ordering: .acquiring), source.hasMoreResponses else { return }
    pull()
  }

  /// Pulls one batch and writes it in one flush (on the loop); then, if the source has more and
  /// the channel still takes bytes, wakes itself for the next batch — behind the jobs already
  /// queued on the loop, so that one stream does not hold up the loop's other work. (NIO runs
  /// those jobs in the same turn of the loop: a stream gives the loop back to its I/O once its
  /// source runs dry or its channel fills.)
  func pull() {
    isScheduled.store(false, ordering: .releasing)
    guard !isOver.load(ordering: .acquiring) else { return }
    let handler = connection.value
    // While the channel is full, what the source holds stays there (to be coalesced) — but
    // once after the GOAWAY, one batch more is buffered: the stream's end, usually.
    let goingAway = pullsDespiteFullChannel.exchange(false, ordering: .acquiringAndReleasing)
    guard handler.isWritable || goingAway else { return waitUntilWritable(handler) }
    if handler.isWritable { tell(isWritable: true) }
    let outcome: ServerConnectionHandler.SendOutcome?
    do throws(RPCError) {
      outcome = try handler.writeResponses(callID: callID, compresses: compresses) { batch throws(RPCError) in
        try source.nextResponses(into: &batch)
      }
    } catch {
      return handler.finish(callID: callID, status: error.status)
    }
    switch outcome {
    case .sentMustWait: waitUntilWritable(handler)
    case .callOver, nil: break
    case .sent, .sentAndFlushed: if source.hasMoreResponses { wake() }
    }
  }

  /// Pulls again once the connection takes bytes, and tells the source it does not now.
  private func waitUntilWritable(_ handler: ServerConnectionHandler) {
    tell(isWritable: false)
    handler.wakeWhenWritable(callID: callID, self)
  }

  /// Tells the source whether the connection takes bytes, if that changed.
  private func tell(isWritable: Bool) {
    guard toldWritable.exchange(isWritable, ordering: .relaxed) != isWritable else { return }
    source.connectionWritabilityChanged(isWritable)
  }
}
