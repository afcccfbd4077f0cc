import CoreMetrics
import Logging
import Synchronization

/// Subscribers' positions ahead of their topic's top offset in the topic's own epoch. Offsets
/// only grow within an epoch, and a client only hears of committed ones, so each such position
/// proves that storage lost history it had acknowledged — a data directory restored whole, say,
/// which nothing inside it can notice. Other clients of the topic may then hold cards the broker
/// lost, and the offsets they saw would be given again to other changes.
///
/// The position itself is answered with a snapshot, and the topic gets a new epoch
/// (``Broker/startNewEpoch(of:)``). Every such position is counted
/// (`pushline_positions_ahead_total`) and logged at `error` — one line a minute at most, with
/// the count since the last, as a restore brings thousands at once — since the other topics of
/// a restored directory lost history too, unnoticed until a client of theirs shows it: an
/// operator can start every topic in a new epoch (README: the broker started once without
/// `broker.run`).
final class HistoryLossReport: Sendable {
  private struct Pending {
    var lastLoggedMillis: Int64?
    var unlogged = 0
  }

  /// The least time between two lines.
  static let logIntervalMillis: Int64 = 60_000
  /// The line's message.
  static let message: Logger.Message =
    "a subscriber's position is ahead of its topic: storage lost offsets it had acknowledged (a data directory restored whole?). The topic gets a new epoch (once per run), and its subscribers snapshots in it; other topics may have lost history unnoticed. To start every topic in a new epoch, stop the broker, remove broker.run from its data directory, and start it"

  private let pending = Mutex(Pending())
  private let counter: Counter
  private let logger: Logger

  init(counter: Counter, logger: Logger) {
    self.counter = counter
    self.logger = logger
  }

  /// Reports a client at `offset` of `topic`'s epoch, above its `topOffset`.
  func note(topic: String, epoch: Int64, offset: Int64, topOffset: Int64, nowMillis: Int64) {
    counter.increment()
    let count: Int? = pending.withLock { pending in
      pending.unlogged += 1
      if let last = pending.lastLoggedMillis, nowMillis - last < Self.logIntervalMillis { return nil }
      defer { pending = Pending(lastLoggedMillis: nowMillis) }
      return pending.unlogged
    }
    guard let count else { return }
    logger.error(
      Self.message,
      metadata: ["topic": "\(topic)", "epoch": "\(epoch)", "offset": "\(offset)", "topOffset": "\(topOffset)", "positionsAhead": "\(count)"])
  }
}
