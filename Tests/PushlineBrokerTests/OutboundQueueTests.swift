@testable import PushlineBroker
import PushlineSchema
import PushlineTesting
import Testing

/// How a take groups what is queued into updates, whether it makes few updates or many.
@Suite("Taking from an outbound queue")
struct OutboundQueueTests {
  /// What is queued, in order: a change of a topic (with the step that queued it, if it came
  /// in a run that is not spelled out), or a snapshot of one.
  enum Queued {
    case change(topic: String, EncodedCardChange, run: Int64? = nil)
    case snapshot(EncodedTopicUpdate)
  }

  /// The grouping a take promises: a snapshot travels alone; a change joins its topic's last
  /// update of the take unless that is a snapshot, and otherwise opens one.
  static func expectedUpdates(_ queued: [Queued]) -> [EncodedTopicUpdate] {
    var updates: [EncodedTopicUpdate] = []
    var open: [String: Int] = [:]
    for entry in queued {
      switch entry {
      case .snapshot(let update):
        open[update.topic] = nil
        updates.append(update)
      case .change(let topic, let change, _):
        if let index = open[topic] {
          updates[index].changes.append(change)
        } else {
          open[topic] = updates.count
          var update = EncodedTopicUpdate(topic: topic, epoch: 1, throughOffset: 0)
          update.changes = [change]
          updates.append(update)
        }
      }
    }
    return updates
  }

  /// Takes of every size, over 1 to 40 topics with snapshots among the changes, group as the
  /// model does: the few-updates path (a scan) and the many-updates one (a table) agree.
  @Test(arguments: 0..<40)
  func takesGroupChangesByTopicAroundSnapshots(seed: Int) throws {
    var random = SplitMix64(seed: UInt64(seed) &* 0x2545_F491 &+ 7)
    let topics = (0..<(1 + Int(random.next() % 40))).map { "t\($0)" }
    var queue = OutboundQueue()
    var queued: [Queued] = []
    for offset in 1...(1 + Int64(random.next() % 150)) {
      let topic = topics[Int(random.next() % UInt64(topics.count))]
      if random.next() % 10 == 0 {
        var snapshot = EncodedTopicUpdate(topic: topic, epoch: 1, throughOffset: offset)
        snapshot.snapshot = true
        queue.append(snapshot: snapshot)
        queued.append(.snapshot(snapshot))
      } else {
        // A card of its own per change: nothing is coalesced, so the queue keeps their order.
        let change = EncodedCardChange(upserting: EncodedCard(card("c\(offset)", Int(offset))), offset: offset)
        queue.append(change, topic: topic)
        queued.append(.change(topic: topic, change))
      }
    }
    #expect(try queue.take(limit: .max) { _ in 1 }.map(readOffTheWire) == Self.expectedUpdates(queued), "seed \(seed)")
    #expect(queue.isEmpty)
  }

  /// Random appends (few cards, so most replace a queued one), snapshots, drops and takes of
  /// random sizes, checked after each step against a plain list: short queues are scanned and
  /// long ones indexed, and a queue goes back and forth between the two.
  @Test(arguments: 0..<40)
  func aQueueBehavesAsAListWithOneEntryPerCard(seed: Int) throws {
    try Self.checkAgainstAList(seed: seed, steps: 400, cards: 24, dropsPerMille: 50, takesPerMille: 100)
  }

  /// The same over a long run with many cards, so that the queue seldom empties and is
  /// compacted (its taken slots dropped, its index rebuilt) while it holds entries.
  @Test(arguments: 0..<8)
  func aLongQueueIsCompactedWithoutLosingItsOrder(seed: Int) throws {
    try Self.checkAgainstAList(seed: seed, steps: 4_000, cards: 3_000, dropsPerMille: 1, takesPerMille: 40)
  }

  /// The model of spelling out `topic`'s runs: the topic's entries move to the back, in
  /// order, its changes one by one, and those whose card has a later change of the topic go;
  /// how many went.
  static func spellOut(_ topic: String, in model: inout [Queued]) -> Int {
    guard model.contains(where: { if case .change(topic, _, _?) = $0 { true } else { false } }) else { return 0 }
    let moved = model.filter { Self.topic(of: $0) == topic }
    model.removeAll { Self.topic(of: $0) == topic }
    var latest: [String: Int] = [:]
    for (position, entry) in moved.enumerated() {
      if case .change(_, let change, _) = entry { latest[change.cardID] = position }
    }
    for (position, entry) in moved.enumerated() {
      guard case .change(_, let change, _) = entry else {
        model.append(entry)
        continue
      }
      if latest[change.cardID] == position { model.append(.change(topic: topic, change)) }
    }
    return moved.count - model.count(where: { Self.topic(of: $0) == topic })
  }

  /// Runs `steps` random steps — snapshots (5 %), drops of a topic and takes at the rates
  /// given, a commit's changes of a few cards appended together up to a bound (30 %), single
  /// appends of `cards` card IDs otherwise — on a queue and on a plain list: a commit's
  /// changes stack as a run while the topic holds only a few runs, and are coalesced one by
  /// one otherwise.
  static func checkAgainstAList(seed: Int, steps: Int64, cards: UInt64, dropsPerMille: UInt64, takesPerMille: UInt64) throws {
    var random = SplitMix64(seed: UInt64(seed) &* 0x9E37_79B9 &+ 11)
    let topics = (0..<(1 + Int(random.next() % 4))).map { "t\($0)" }
    var queue = OutboundQueue()
    var model: [Queued] = []
    for offset in Int64(1)...steps {
      let topic = topics[Int(random.next() % UInt64(topics.count))]
      let roll = random.next() % 1000
      switch roll {
      case ..<50:
        var snapshot = EncodedTopicUpdate(topic: topic, epoch: 1, throughOffset: offset)
        snapshot.snapshot = true
        queue.append(snapshot: snapshot)
        model.append(.snapshot(snapshot))
      case ..<(50 + dropsPerMille):
        queue.removeAll(for: topic)
        model.removeAll { Self.topic(of: $0) == topic }
      case ..<(50 + dropsPerMille + takesPerMille):
        let limit = 1 + Int(random.next() % 30)
        var taken = 0
        var taking: [Queued] = []
        while !model.isEmpty, taken < limit {
          let entry = model.removeFirst()
          if case .snapshot(let update) = entry { taken += max(1, update.changes.count) } else { taken += 1 }
          taking.append(entry)
        }
        #expect(try queue.take(limit: limit) { _ in 1 }.map(readOffTheWire) == Self.expectedUpdates(taking), "seed \(seed), step \(offset)")
      case ..<(50 + dropsPerMille + takesPerMille + 300):
        // A commit's changes of distinct cards, queued together up to a bound, from a random
        // start (those before it were queued already).
        var cardIDs: [String] = []
        for _ in 0..<(1 + random.next() % 6) {
          let cardID = "c\(random.next() % cards)"
          if !cardIDs.contains(cardID) { cardIDs.append(cardID) }
        }
        let changes = cardIDs.map { EncodedCardChange(upserting: EncodedCard(card($0, Int(offset))), offset: offset) }
        let queuedChanges = model.count { if case .change = $0 { true } else { false } }
        let bound = queuedChanges + Int(random.next() % 8)
        let start = Int(random.next() % UInt64(changes.count))
        let ofTopic = model.filter { Self.topic(of: $0) == topic }
        let runs = Set(ofTopic.compactMap { if case .change(_, _, let run?) = $0 { run } else { nil } })
        let onlyRuns = ofTopic.allSatisfy { if case .change(_, _, _?) = $0 { true } else { false } }
        let stacking = random.next() % 2 == 0
        let room = max(0, bound - queuedChanges)
        var (appended, coalesced) = (0, 0)
        if ofTopic.isEmpty {
          // A run, unless the subscriber has fallen behind: then change by change.
          let run = stacking || model.isEmpty ? offset : nil
          appended = min(changes.count - start, room)
          for change in changes[start..<start + appended] { model.append(.change(topic: topic, change, run: run)) }
        } else if stacking, changes.count - start <= room, onlyRuns, runs.count < OutboundQueue.maxStackedRuns {
          appended = changes.count - start
          for change in changes[start...] { model.append(.change(topic: topic, change, run: offset)) }
        } else {
          coalesced = Self.spellOut(topic, in: &model)
          for change in changes[start...] {
            let replaced = model.firstIndex { if case .change(topic, let queued, _) = $0 { queued.cardID == change.cardID } else { false } }
            // At the bound only a replacement fits.
            guard replaced != nil || model.count(where: { if case .change = $0 { true } else { false } }) < bound else { break }
            if let replaced {
              model.remove(at: replaced)
              coalesced += 1
            }
            model.append(.change(topic: topic, change))
            appended += 1
          }
        }
        let outcome = queue.append(EncodedChangeRun(changes), from: start, topic: topic, whileFewerThan: bound, stacking: stacking)
        #expect(outcome.appended == appended && outcome.coalesced == coalesced, "seed \(seed), step \(offset)")
      default:
        let cardID = "c\(random.next() % cards)"
        let change = EncodedCardChange(upserting: EncodedCard(card(cardID, Int(offset))), offset: offset)
        _ = Self.spellOut(topic, in: &model)
        let replaced = model.firstIndex { if case .change(topic, let queued, _) = $0 { queued.cardID == cardID } else { false } }
        if let replaced { model.remove(at: replaced) }
        #expect(queue.append(change, topic: topic) == (replaced != nil))
        model.append(.change(topic: topic, change))
      }
      #expect(queue.isEmpty == model.isEmpty)
      #expect(queue.changeCount == model.count { if case .change = $0 { true } else { false } })
      for topic in topics {
        #expect(queue.hasEntries(for: topic) == model.contains { Self.topic(of: $0) == topic }, "seed \(seed), step \(offset)")
      }
    }
  }

  /// Large cards end a take at about a mebibyte of them, well before its change limit, so an
  /// update stays far under the 4 MiB message limit; the rest follow in order. Alike whether
  /// they were queued one by one or as one commit's run.
  @Test(arguments: [false, true])
  func largeCardsEndATakeAtItsByteBudget(asOneRun: Bool) {
    var queue = OutboundQueue()
    let cards = Self.largeChanges(40)
    if asOneRun {
      #expect(queue.append(EncodedChangeRun(cards), from: 0, topic: "t", whileFewerThan: .max) == (40, 0))
    } else {
      for change in cards { _ = queue.append(change, topic: "t") }
    }
    var taken: [[EncodedCardChange]] = []
    while !queue.isEmpty { taken.append(queue.take(limit: 512) { _ in 1 }.flatMap(\.topicUpdate.changes)) }
    let sizes = taken.map { $0.reduce(0) { $0 + ($1.card?.encodedSize() ?? 0) } }
    #expect(taken.count == 3 && taken.flatMap { $0 } == cards)
    // Full, yet within the budget: the next card would have passed it.
    #expect(sizes.allSatisfy { $0 <= OutboundQueue.maxTakeBytes } && sizes[0] > OutboundQueue.maxTakeBytes - 61_000)
  }

  /// A snapshot of more than a take's bytes goes in parts: the first is the snapshot,
  /// positioned at its last card; the rest follow as changes, in order, each part under the
  /// budget.
  @Test func aSnapshotOverTheByteBudgetGoesInParts() throws {
    var queue = Self.queueWithLargeSnapshot(of: 40, through: 50)
    let parts = try Self.takeAll(from: &queue, limit: 512)
    #expect(parts.map(\.changes.count) == [17, 17, 6])
    #expect(parts[0].isSnapshot && parts[0].throughOffset == 17)
    #expect(parts.dropFirst().allSatisfy { !$0.isSnapshot })
    #expect(parts.flatMap(\.changes) == Self.largeChanges(40))
    #expect(parts.allSatisfy { $0.changes.reduce(0) { $0 + ($1.card?.encodedSize() ?? 0) } <= OutboundQueue.maxTakeBytes })
    // With the last part the client holds the whole snapshot: positioned at its offset, and
    // complete; the parts before it are neither.
    #expect(parts.map(\.isComplete) == [false, false, true] && parts[2].throughOffset == 50)
  }

  /// A catch-up queued whole counts its changes toward the bound as they remain, goes in parts
  /// of the take's limit, and its last part is complete at the offset it was made at; a newer
  /// version of one of its cards queues behind it, in an update of its own.
  @Test func aCatchUpGoesInCountedPartsAndEndsComplete() throws {
    var queue = OutboundQueue()
    var catchUp = EncodedTopicUpdate(topic: "t", epoch: 1, throughOffset: 9)
    catchUp.changes = (4...8).map { EncodedCardChange(upserting: EncodedCard(card("c\($0)", $0)), offset: Int64($0)) }
    queue.append(catchUp: catchUp)
    #expect(queue.changeCount == 5)
    queue.append(EncodedCardChange(upserting: EncodedCard(card("c4", 10)), offset: 10), topic: "t")
    #expect(queue.changeCount == 6)
    let first = try queue.take(limit: 2) { _ in 1 }.map(readOffTheWire)
    #expect(first.count == 1 && first[0].changes.map(\.offset) == [4, 5] && !first[0].isComplete && queue.changeCount == 4)
    let rest = try queue.take(limit: 512) { _ in 1 }.map(readOffTheWire)
    #expect(rest.count == 2 && rest[0].changes.map(\.offset) == [6, 7, 8] && rest[0].isComplete && rest[0].throughOffset == 9)
    #expect(rest[1].changes.map(\.offset) == [10] && queue.changeCount == 0)

    // Over a take's bytes, with no limit on its changes (`Int.max`): parts by bytes alone.
    var large = EncodedTopicUpdate(topic: "t", epoch: 1, throughOffset: 40)
    large.changes = Self.largeChanges(40)
    queue.append(catchUp: large)
    let parts = try Self.takeAll(from: &queue, limit: .max)
    #expect(parts.map(\.changes.count) == [17, 17, 6] && parts.map(\.isComplete) == [false, false, true])
  }

  /// A change queued behind a snapshot in parts does not join its last part (which is
  /// complete at the snapshot's offset): it goes in an update of its own.
  @Test func aChangeBehindASnapshotsLastPartTravelsInAnUpdateOfItsOwn() throws {
    var queue = Self.queueWithLargeSnapshot(of: 20, through: 30)
    queue.append(EncodedCardChange(upserting: EncodedCard(card("c1", 31)), offset: 31), topic: "t")
    let first = try queue.take(limit: 512) { _ in 1 }.map(readOffTheWire)
    let rest = try queue.take(limit: 512) { _ in 1 }.map(readOffTheWire)
    #expect(first.count == 1 && first[0].isSnapshot && rest.count == 2)
    #expect(rest[0].isComplete && rest[0].throughOffset == 30 && rest[0].changes.map(\.offset) == [18, 19, 20])
    #expect(!rest[1].isComplete && rest[1].changes.map(\.offset) == [31])
  }

  /// While the connection takes bytes a commit's run stacks on the topic's runs only if it
  /// fits whole under the bound; otherwise it is merged into them, where it may fit.
  @Test func aStackedRunThatWouldNotFitIsMergedInstead() {
    func run(_ base: Int) -> EncodedChangeRun {
      EncodedChangeRun((0..<6).map { EncodedCardChange(upserting: EncodedCard(card("c\($0)", base + $0)), offset: Int64(base + $0)) })
    }
    var queue = OutboundQueue()
    #expect(queue.append(run(1), from: 0, topic: "t", whileFewerThan: 10, stacking: true) == (6, 0))
    #expect(queue.append(run(7), from: 0, topic: "t", whileFewerThan: 10, stacking: true) == (6, 6))
    #expect(queue.changeCount == 6)
  }

  /// A queue at its bound still takes newer versions of the cards it holds, which replace
  /// them and do not grow it; a new card is the first change that does not fit.
  @Test func aFullQueueStillCoalesces() {
    func change(_ id: String, _ offset: Int64) -> EncodedCardChange {
      EncodedCardChange(upserting: EncodedCard(card(id, Int(offset))), offset: offset)
    }
    var queue = OutboundQueue()
    let first = EncodedChangeRun((0..<6).map { change("c\($0)", Int64($0 + 1)) })
    #expect(queue.append(first, from: 0, topic: "t", whileFewerThan: 6) == (6, 0))
    let newer = EncodedChangeRun((0..<6).map { change("c\($0)", Int64($0 + 7)) })
    #expect(queue.append(newer, from: 0, topic: "t", whileFewerThan: 6) == (6, 6))
    let mixed = EncodedChangeRun([change("c0", 13), change("new", 14), change("c1", 15)])
    #expect(queue.append(mixed, from: 0, topic: "t", whileFewerThan: 6) == (1, 1))
    #expect(queue.changeCount == 6)
  }

  /// A queue nothing takes from (a subscriber that stopped reading) stays bounded by its
  /// cards however many newer versions replace them: the holes the replaced ones leave go as
  /// they pile up, not at the next take.
  @Test func replacementsWithoutATakeDoNotGrowTheQueue() throws {
    var queue = OutboundQueue()
    var offset: Int64 = 0
    for round in 0..<1000 {
      let run = EncodedChangeRun((0..<100).map { index in
        offset += 1
        return EncodedCardChange(upserting: EncodedCard(card("c\(index)", round)), offset: offset)
      })
      _ = queue.append(run, from: 0, topic: "t", whileFewerThan: 100)
    }
    #expect(queue.changeCount == 100)
    #expect(queue.slotCount <= 2 * 100 + 1024 + 100)
    let taken = queue.take(limit: 1000) { _ in 1 }
    #expect(taken.flatMap(\.topicUpdate.changes).map(\.offset) == (offset - 99...offset).map { $0 })
  }

  /// At most ``OutboundQueue/maxStackedRuns`` runs of a topic stack; the next merges them.
  @Test func atMostSixteenRunsOfATopicStack() {
    var queue = OutboundQueue()
    for step in 0..<OutboundQueue.maxStackedRuns {
      let change = EncodedCardChange(upserting: EncodedCard(card("c", step)), offset: Int64(step + 1))
      #expect(queue.append(EncodedChangeRun([change]), from: 0, topic: "t", whileFewerThan: .max, stacking: true) == (1, 0))
    }
    let last = EncodedCardChange(upserting: EncodedCard(card("c", 99)), offset: 99)
    #expect(queue.append(EncodedChangeRun([last]), from: 0, topic: "t", whileFewerThan: .max, stacking: true) == (1, 16))
    #expect(queue.changeCount == 1)
  }

  /// A run queued by two subscribers reaches each whole, however each takes it; a newer
  /// version of one of its cards, queued by one of them before it took the run, replaces the
  /// older one there (and goes to the back) but not in the other's queue or in the run.
  @Test func aRunSharedByTwoQueuesReachesEachWhole() throws {
    let changes = (1...10).map { EncodedCardChange(upserting: EncodedCard(card("c\($0)", $0)), offset: Int64($0)) }
    let run = EncodedChangeRun(changes)
    var (slow, fast) = (OutboundQueue(), OutboundQueue())
    #expect(slow.append(run, from: 0, topic: "t", whileFewerThan: .max) == (10, 0))
    #expect(fast.append(run, from: 2, topic: "t", whileFewerThan: .max) == (8, 0))
    #expect(try fast.take(limit: 3) { _ in 1 }.map(readOffTheWire).flatMap(\.changes) == Array(changes[2..<5]))
    #expect(try fast.take(limit: 100) { _ in 1 }.map(readOffTheWire).flatMap(\.changes) == Array(changes[5...]))
    #expect(fast.isEmpty)

    let newer = EncodedCardChange(upserting: EncodedCard(card("c4", 11)), offset: 11)
    #expect(slow.append(EncodedChangeRun([newer]), from: 0, topic: "t", whileFewerThan: .max) == (1, 1))
    #expect(slow.changeCount == 10)
    var taken: [EncodedCardChange] = []
    while !slow.isEmpty { taken += try slow.take(limit: 4) { _ in 1 }.map(readOffTheWire).flatMap(\.changes) }
    #expect(taken == changes.filter { $0.cardID != "c4" } + [newer])
    #expect(run.changes == changes)
  }

  /// Changes of cards c1…c`count` of 60 KB each, at offsets 1…`count`: 18 fill a take's bytes.
  static func largeChanges(_ count: Int) -> [EncodedCardChange] {
    (1...count).map { EncodedCardChange(upserting: EncodedCard(titled("c\($0)", bytes: 60_000)), offset: Int64($0)) }
  }

  /// A queue holding a snapshot of topic `t` at `offset`: `count` of ``largeChanges(_:)``.
  static func queueWithLargeSnapshot(of count: Int, through offset: Int64) -> OutboundQueue {
    var queue = OutboundQueue()
    var snapshot = EncodedTopicUpdate(topic: "t", epoch: 1, throughOffset: offset)
    snapshot.snapshot = true
    snapshot.changes = largeChanges(count)
    queue.append(snapshot: snapshot)
    return queue
  }

  /// Every update `queue` holds, taken `limit` changes at a time, as the wire carries them.
  static func takeAll(from queue: inout OutboundQueue, limit: Int) throws -> [EncodedTopicUpdate] {
    var updates: [EncodedTopicUpdate] = []
    while !queue.isEmpty { updates += try queue.take(limit: limit) { _ in 1 }.map(readOffTheWire) }
    return updates
  }

  static func topic(of entry: Queued) -> String {
    switch entry {
    case .change(let topic, _, _): topic
    case .snapshot(let update): update.topic
    }
  }
}
