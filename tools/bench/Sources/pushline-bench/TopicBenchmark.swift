import ArgumentParser
import PushlineBroker
import PushlineSchema

/// `pushline-bench topic`: what one commit costs a topic of many cards under the broker's lock
/// while a copy of the topic is held — as it is while a subscribe's start or a GetCards is
/// built outside the lock — against the same commit with no copy held. The copy shares the
/// topic's storage, so the commit copies what it writes to: one shard of the card table and
/// one chunk of the recent changes, not the topic.
struct TopicBenchmark: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "topic", abstract: "A commit to a topic of many cards while a copy of it is held, against one with none.")

  @Option(help: "Cards in the topic.") var cards = 100_000
  @Option(help: "Commits timed, each of one change.") var commits = 401

  func run() {
    print("one change committed to a topic of \(cards) cards (TopicState.apply), \(commits) commits each; medians and p99")
    let styles: [(label: String, cardID: (Int) -> String)] = [("IDs of 10 bytes", BenchCard.cardID), ("IDs of 36 bytes", Self.uuidLike)]
    for (label, cardID) in styles {
      var topic = Self.topic(cards: cards, cardID: cardID)
      func commitNext() -> Duration {
        let offset = Int(topic.topOffset) + 1
        return ContinuousClock().measure { topic.apply([Self.record(cardID(offset % cards), offset)]) }
      }
      let withCopy = Self.time(commits) {
        let copy = topic
        defer { withExtendedLifetime(copy) {} }
        return commitNext()
      }
      let alone = Self.time(commits, commitNext)
      print("  \(label): with a copy held \(withCopy); with none \(alone)")
    }
  }

  private static let card = EncodedCard(BenchCard.card(cardID: "c", stampNanos: 0))

  private static func record(_ cardID: String, _ offset: Int) -> CardRecord {
    CardRecord(cardID: cardID, offset: Int64(offset), card: card, changedAtMillis: Int64(offset))
  }

  /// A cardID as long as a UUID's text.
  private static func uuidLike(_ index: Int) -> String {
    "card-" + String(repeating: "0", count: 31 - String(index).count) + String(index)
  }

  /// A topic of `cards` cards, then as many updates again, so that its recent changes have
  /// reached their steady size.
  private static func topic(cards: Int, cardID: (Int) -> String) -> TopicState {
    var topic = TopicState(name: "t", epoch: 1)
    var offset = 0
    for start in stride(from: 0, to: 2 * cards, by: 1_000) {
      topic.apply((start..<min(start + 1_000, 2 * cards)).map { index in
        offset += 1
        return record(cardID(index % cards), offset)
      })
    }
    return topic
  }

  /// Times `commits` commits: "median X µs, p99 Y µs".
  private static func time(_ commits: Int, _ commit: () -> Duration) -> String {
    let micros = (0..<commits).map { _ in commit().nanoseconds / 1_000 }.sorted()
    return String(format: "median %.1f µs, p99 %.1f µs", micros[commits / 2], micros[commits * 99 / 100])
  }
}
