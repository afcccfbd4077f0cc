import PushlineRPC
public import PushlineSchema

/// A subscription's pending deliveries, coalesced by (topic, cardID): a newer version of a
/// queued card replaces the older one and moves to the back, so the queue holds one entry per
/// card (two while a resume's catch-up, queued whole, holds the older) and per-topic offsets
/// stay increasing from front to back.
///
/// Why to the back: sending the newer version in the older one's place would deliver an
/// offset above the changes queued between them, and a connection lost right after would let
/// the client resume past changes it never saw.
///
/// While the subscriber's connection takes bytes (or its queue is empty), a commit's changes
/// of a topic with nothing queued are queued as one entry: a slice of the commit's run,
/// shared with the topic's other subscribers and encoded once for all of them. So are they
/// while the topic holds only a few runs (its pump has simply not taken the last commit or
/// two yet): a card may then be queued in two runs, and both versions go, in offset order
/// (the contract allows it; coalescing them is what bounds a slow subscriber's queue, not what
/// makes it correct). Otherwise the topic's runs are spelled out change by change, older
/// versions dropped, and newer changes coalesced one by one.
public struct OutboundQueue: Sendable {
  private struct Key: Hashable {
    var topic: String
    var cardID: String
  }

  private enum Entry {
    case change(topic: String, EncodedCardChange)
    /// The changes of a shared run in the range.
    case run(topic: String, EncodedChangeRun, Range<Int>)
    /// An update queued whole — a snapshot, or a resume's catch-up — from its change `from`
    /// on: a part of it was sent already (see ``take(limit:epoch:)``). Newer versions of its
    /// cards do not replace its changes: they queue behind it.
    case whole(EncodedTopicUpdate, from: Int)

    var topic: String {
      switch self {
      case .change(let topic, _), .run(let topic, _, _): topic
      case .whole(let update, _): update.topic
      }
    }

    /// The card changes it holds outside snapshots: what it counts for the queue's bound.
    var changeCount: Int {
      switch self {
      case .change: 1
      case .run(_, _, let range): range.count
      case .whole(let update, let from): update.isSnapshot ? 0 : update.changes.count - from
      }
    }
  }

  /// Entries in delivery order; a replaced entry leaves a `nil` hole behind, skipped when
  /// taken and compacted away once holes outnumber entries.
  private var slots: [Entry?] = []
  private var head = 0
  /// The slots held, holes included: what the queue's memory grows with, bounded by its
  /// entries (``compactIfSparse()``).
  var slotCount: Int { slots.count }
  /// Where each queued card is and how many entries each topic has: built when a lookup would
  /// have to scan more than ``scanLimit`` slots — a subscriber fallen behind, whose new
  /// changes replace queued ones — and kept up until the queue empties. A subscriber keeping
  /// up, the common case, queues and takes even long runs of changes with no lookup, and so
  /// with no tables and no hashing per change.
  private var index: Index?
  /// How many card changes are queued outside snapshots: what the queue's bound limits.
  public private(set) var changeCount = 0
  /// How many entries (changes, runs and snapshots) are queued.
  private var entryCount = 0
  /// How many of them are runs.
  private var runCount = 0
  /// How many queued changes a newer version has replaced since the queue was created.
  public private(set) var coalescedCount = 0

  /// The most entries a lookup scans before a table is kept instead: a queue's slots before it
  /// builds an ``Index``, a take's updates before it keeps their table.
  private static let scanLimit = 16

  /// An empty queue.
  public init() {}

  /// Whether nothing is queued.
  public var isEmpty: Bool { entryCount == 0 }

  /// Whether entries for `topic` are queued.
  public mutating func hasEntries(for topic: String) -> Bool {
    guard entryCount > 0 else { return false }
    if index == nil {
      // The front first: a subscriber of one topic finds it in the first live slot.
      var (scanned, live) = (0, 0)
      for slot in slots[head...] {
        guard scanned < Self.scanLimit else { break }
        scanned += 1
        guard let entry = slot else { continue }
        if entry.topic == topic { return true }
        live += 1
        if live == entryCount { return false }
      }
      index = Index(slots, from: head)
    }
    return index!.perTopic[topic, default: 0] > 0
  }

  /// Queues `change` (which has its offset) for `topic`, replacing a queued change of the
  /// same card; returns whether it replaced one.
  @discardableResult
  public mutating func append(_ change: EncodedCardChange, topic: String) -> Bool {
    reserveIfEmpty()
    spellOutRuns(of: topic)
    return appendReplacingQueued(change, topic: topic)
  }

  /// Queues the changes of `run` from `start` for `topic` — distinct cards in offset order,
  /// as a commit's coalesced changes are — while the queue holds fewer than `maxChanges`
  /// changes; returns how many were queued, and how many queued changes they made redundant.
  /// When the topic has nothing queued, or when `stacking` (the subscriber's connection takes
  /// bytes) and the topic's queued entries are fewer than ``maxStackedRuns`` runs, the
  /// changes are queued as one entry, a slice of the shared run, replacing nothing; otherwise
  /// each replaces a queued change of its card, once the topic's runs are spelled out.
  public mutating func append(
    _ run: EncodedChangeRun, from start: Int, topic: String, whileFewerThan maxChanges: Int, stacking: Bool = false
  ) -> (appended: Int, coalesced: Int) {
    guard start < run.count else { return (0, 0) }
    let wasEmpty = isEmpty
    reserveIfEmpty()
    let room = max(0, maxChanges - changeCount)
    if !hasEntries(for: topic) {
      let count = min(run.count - start, room)
      // A subscriber fallen behind queues change by change: a run would only be spelled out.
      guard stacking || wasEmpty else {
        for position in start..<start + count { appendSlot(.change(topic: topic, run.changes[position])) }
        return (count, 0)
      }
      if count > 0 { appendSlot(.run(topic: topic, run, start..<start + count)) }
      return (count, 0)
    }
    // Stacked only if it fits whole: merged into the queued runs, it might.
    guard stacking, run.count - start <= room, holdsFewRunsOnly(of: topic) else {
      return appendReplacingQueued(run, from: start, topic: topic, whileFewerThan: maxChanges)
    }
    appendSlot(.run(topic: topic, run, start..<run.count))
    return (run.count - start, 0)
  }

  /// How many runs of a topic may stack while the connection takes bytes, before the next is
  /// coalesced change by change: a subscriber whose pump has not yet taken the last commit or
  /// two is not a slow one, and spelling its runs out would cost it a table entry per change.
  static let maxStackedRuns = 16

  /// Whether `topic`'s queued entries are all runs, fewer than ``maxStackedRuns``.
  private mutating func holdsFewRunsOnly(of topic: String) -> Bool {
    if index == nil, slots.count - head > Self.scanLimit { index = Index(slots, from: head) }
    if let index {
      let runs = index.runsPerTopic[topic, default: 0]
      return runs < Self.maxStackedRuns && runs == index.perTopic[topic, default: 0]
    }
    var runs = 0
    for slot in slots[head...] {
      guard let entry = slot, entry.topic == topic else { continue }
      guard case .run = entry else { return false }
      runs += 1
    }
    return runs < Self.maxStackedRuns
  }

  /// ``append(_:from:topic:whileFewerThan:)`` change by change, each replacing a queued
  /// change of its card, once the topic's runs are spelled out.
  private mutating func appendReplacingQueued(
    _ run: EncodedChangeRun, from start: Int, topic: String, whileFewerThan maxChanges: Int
  ) -> (appended: Int, coalesced: Int) {
    var (appended, coalesced) = (0, spellOutRuns(of: topic))
    for change in run.changes[start...] {
      let queued = position(of: Key(topic: topic, cardID: change.cardID))
      // At the bound, a change that replaces a queued one still fits: the queue does not grow.
      guard queued != nil || changeCount < maxChanges else { break }
      if append(change, topic: topic, replacingAt: queued) { coalesced += 1 }
      appended += 1
    }
    return (appended, coalesced)
  }

  /// Replaces the queued runs of `topic` by their changes, one entry each, so that newer
  /// versions can replace them: the topic's entries move to the back of the queue, in order
  /// (the order between topics is free), runs spelled out, and a change whose card has a later
  /// change of the topic queued (runs stacked while the subscriber kept up) dropped. Costs a
  /// look at each slot and a move of the topic's entries, not a rebuilt queue. Returns how
  /// many changes were dropped.
  @discardableResult
  private mutating func spellOutRuns(of topic: String) -> Int {
    guard runCount > 0 else { return 0 }
    // A long queue keeps its index from now on (its lookups would need it anyway), which says
    // whether the topic has runs without a scan.
    if index == nil, slots.count - head > Self.scanLimit { index = Index(slots, from: head) }
    if let index, index.runsPerTopic[topic, default: 0] == 0 { return 0 }
    var moved: [Entry] = []
    var hasRun = false
    for position in head..<slots.count {
      guard let entry = slots[position], entry.topic == topic else { continue }
      switch entry {
      case .run(_, let run, let range):
        hasRun = true
        for change in run.changes[range] { moved.append(.change(topic: topic, change)) }
      default: moved.append(entry)
      }
    }
    guard hasRun else { return 0 }
    for position in head..<slots.count where slots[position]?.topic == topic { remove(at: position) }
    var latest: [String: Int] = [:]
    for (position, entry) in moved.enumerated() {
      if case .change(_, let change) = entry { latest[change.cardID] = position }
    }
    var dropped = 0
    for (position, entry) in moved.enumerated() {
      if case .change(_, let change) = entry, latest[change.cardID] != position {
        dropped += 1
      } else {
        appendSlot(entry)
      }
    }
    coalescedCount += dropped
    compactIfSparse()
    return dropped
  }

  /// Queues `change`, replacing a queued change of its card; whether it replaced one.
  private mutating func appendReplacingQueued(_ change: EncodedCardChange, topic: String) -> Bool {
    append(change, topic: topic, replacingAt: position(of: Key(topic: topic, cardID: change.cardID)))
  }

  /// Queues `change` at the back, removing the queued change of its card at `queued` (found by
  /// ``position(of:)``) if any; returns whether it replaced one.
  private mutating func append(_ change: EncodedCardChange, topic: String, replacingAt queued: Int?) -> Bool {
    if let queued {
      remove(at: queued)
      coalescedCount += 1
    }
    appendSlot(.change(topic: topic, change))
    guard queued != nil else { return false }
    // Each replacement leaves a hole: a queue nothing takes from (a subscriber that stopped
    // reading) must drop them as it goes, or its slots grow with the publish rate.
    compactIfSparse()
    return true
  }

  /// Adds `entry` at the back, and counts it.
  private mutating func appendSlot(_ entry: Entry) {
    slots.append(entry)
    changeCount += entry.changeCount
    if case .run = entry { runCount += 1 }
    entryCount += 1
    index?.record(entry, at: slots.count - 1)
  }

  /// Queues a snapshot of its topic.
  public mutating func append(snapshot: EncodedTopicUpdate) {
    reserveIfEmpty()
    appendSlot(.whole(snapshot, from: 0))
  }

  /// Queues a resume's catch-up (`catchUp`: changes, in offset order, positioned at the
  /// topic's top when it was made). It goes in parts like a snapshot, its changes counted
  /// toward the bound, and its last part — with which the client holds the topic exactly as
  /// it was at that top — is complete, whatever queued behind it.
  public mutating func append(catchUp: EncodedTopicUpdate) {
    reserveIfEmpty()
    appendSlot(.whole(catchUp, from: 0))
  }

  /// Drops everything queued for `topic` (it will be replaced by a snapshot).
  public mutating func removeAll(for topic: String) {
    guard hasEntries(for: topic) else { return }
    for position in head..<slots.count where slots[position]?.topic == topic {
      remove(at: position)
    }
    compactIfSparse()
  }

  /// Takes up to about `limit` changes, and at most `maxBytes` of cards, from the front (at
  /// least one change or snapshot, however large: a card that would pass the budget ends the
  /// take before it, so that a client's message limit holds), as one update per topic and
  /// run: a snapshot travels
  /// alone; consecutive changes of a topic share an update. A run only partly taken leaves the
  /// rest at the front. `epoch(topic)` gives the epoch of changes; `throughOffset` is filled in
  /// by the caller, except for snapshots.
  ///
  /// A snapshot with more than `maxBytes` of cards goes in parts, so that a topic
  /// of many or large cards never outgrows a message: the first part, of at most that many
  /// bytes (or one card larger), is the snapshot, positioned at its last card (its cards are in offset order); the
  /// rest stays at the front, still counting nothing toward the bound, and goes in later takes
  /// as plain changes. A client that applied the first part holds every card up to its
  /// position, and resuming from there brings the rest, since each has a higher offset; the
  /// first part's `snapshotThroughOffset` tells it where the whole ends, so that it keeps the
  /// cards it held until then. A resume's catch-up, queued whole, goes in parts the same way
  /// (of at most `limit` changes too, which it counts toward the bound), and its last part is
  /// complete at the offset it was made at (see `part`).
  public mutating func take(limit: Int, maxBytes: Int = maxTakeBytes, epoch: (String) -> Int64) -> [AssembledTopicUpdate] {
    var updates: [AssembledTopicUpdate] = []
    var openUpdates = OpenUpdates()
    var taken = 0
    var bytes = 0
    taking: while head < slots.count, taken < limit, bytes < maxBytes {
      guard let entry = slots[head] else {
        head += 1
        continue
      }
      switch entry {
      case .whole(let update, let from):
        // A snapshot's part is bounded by bytes alone (it travels alone); a catch-up's by the
        // take's changes too, as the changes it holds.
        let endLimit = update.isSnapshot ? update.changes.count : from + min(update.changes.count - from, limit - taken)
        var (end, partBytes) = (from, 0)
        while end < endLimit {
          let size = Self.size(of: update.changes[end])
          if taken > 0 || end > from, bytes + partBytes + size > maxBytes { break }
          partBytes += size
          end += 1
        }
        if end == from, end < endLimit { break taking }  // none of its cards fits behind what the take holds
        if end < update.changes.count {
          slots[head] = .whole(update, from: end)
          if !update.isSnapshot { changeCount -= end - from }  // a snapshot counts no changes
        } else {
          removeFront()
        }
        openUpdates.append(AssembledTopicUpdate(Self.part(of: update, from: from, to: end)), to: &updates)
        taken += max(1, end - from)
        bytes += partBytes
      case .change(let topic, let change):
        let size = Self.size(of: change)
        if taken > 0, bytes + size > maxBytes { break taking }
        removeFront()
        bytes += size
        openUpdates.add(.change(change), of: topic, epoch: epoch, to: &updates)
        taken += 1
      case .run(let topic, let run, let range):
        let (end, size) = run.slice(from: range.lowerBound, maxCount: min(range.count, limit - taken), maxBytes: maxBytes - bytes)
        if taken > 0, size > maxBytes - bytes { break taking }  // not even its first change fits behind what the take holds
        if end == range.upperBound {
          removeFront()
        } else {
          slots[head] = .run(topic: topic, run, end..<range.upperBound)
          changeCount -= end - range.lowerBound
        }
        openUpdates.add(.run(run, range.lowerBound..<end), of: topic, epoch: epoch, to: &updates)
        bytes += size
        taken += end - range.lowerBound
      }
    }
    compactIfSparse()
    return updates
  }

  /// The part of `update` (a snapshot or a catch-up) with its changes `from..<end`: the whole
  /// update, a catch-up complete at its offset; or its first part, positioned at its last card
  /// — a snapshot's still a snapshot, naming the offset the whole reaches; or a later part,
  /// plain changes — positioned by the taker, as any update of changes, except the last: with
  /// it the client holds the whole, which is exactly the topic's state at the update's offset,
  /// so it is positioned there and complete, whatever queued after it (every later change is
  /// above that offset, and none replaced one of the update's).
  private static func part(of update: EncodedTopicUpdate, from: Int, to end: Int) -> EncodedTopicUpdate {
    let isLast = end == update.changes.count
    var part = update
    if !isLast || from > 0 { part.changes = Array(update.changes[from..<end]) }
    if from > 0 {
      part.snapshot = nil
    } else if !isLast, let last = part.changes.last?.offset {
      part.throughOffset = last
      if update.isSnapshot { part.snapshotThroughOffset = update.throughOffset }
    }
    if isLast, !part.isSnapshot { part.complete = true }
    return part
  }

  /// Removes the entry at the front.
  private mutating func removeFront() {
    remove(at: head)
    head += 1
  }

  /// The bytes of changes a take gathers at most (more only when its first card alone is larger),
  /// for a connection that takes at least twice as much: large cards (up to `Broker.maxCardSize`) fill an update long before
  /// ``take(limit:maxBytes:epoch:)``'s change limit, which would otherwise let one update
  /// outgrow the protocol's 4 MiB message limit.
  public static let maxTakeBytes = 1 << 20

  /// What `change` adds to an update, at most: its card and its ID, and its fields' tags and
  /// lengths, its offset and its own tag and length in the update (22 bytes at most), which
  /// count as much as tiny cards do.
  private static func size(of change: EncodedCardChange) -> Int {
    (change.card?.encodedSize() ?? 0) + change.cardID.utf8.count + 22
  }

  /// Which update of a take a topic's next change joins: its topic's last, unless that is a
  /// snapshot (which travels alone). Found by a scan while the updates are few — a take
  /// usually makes one or two, and a table would be an allocation per take — and from a table
  /// once they are many.
  private struct OpenUpdates {
    private var table: [String: Int]?

    /// The index of the update `topic`'s next change joins, if any.
    func index(of topic: String, in updates: [AssembledTopicUpdate]) -> Int? {
      if let table { return table[topic] }
      guard let index = updates.lastIndex(where: { $0.base.topic == topic }), !Self.isSealed(updates[index]) else { return nil }
      return index
    }

    /// Whether `update` travels alone: a snapshot, or the last part of a snapshot or of a
    /// catch-up, complete at its offset (a change joining it would move its position past what
    /// it makes exact).
    static func isSealed(_ update: AssembledTopicUpdate) -> Bool {
      update.base.isSnapshot || update.base.isComplete
    }

    /// Adds `piece` to the update of `topic` it joins, or to a new one (of epoch `epoch(topic)`).
    mutating func add(
      _ piece: AssembledTopicUpdate.Piece, of topic: String, epoch: (String) -> Int64, to updates: inout [AssembledTopicUpdate]
    ) {
      if let index = index(of: topic, in: updates) { return updates[index].pieces.append(piece) }
      var update = AssembledTopicUpdate(EncodedTopicUpdate(topic: topic, epoch: epoch(topic), throughOffset: 0))
      update.pieces = [piece]
      append(update, to: &updates)
    }

    /// Appends `update` to `updates`, keeping the table once there is one.
    mutating func append(_ update: AssembledTopicUpdate, to updates: inout [AssembledTopicUpdate]) {
      updates.append(update)
      if table == nil, updates.count > OutboundQueue.scanLimit {
        table = [:]
        for (index, update) in updates.enumerated() { table?[update.base.topic] = Self.isSealed(update) ? nil : index }
      } else if table != nil {
        table?[update.base.topic] = Self.isSealed(update) ? nil : updates.count - 1
      }
    }
  }

  private mutating func remove(at position: Int) {
    guard let entry = slots[position] else { return }
    slots[position] = nil
    entryCount -= 1
    index?.forget(entry)
    changeCount -= entry.changeCount
    if case .run = entry { runCount -= 1 }
  }

  /// The slot of `key`'s queued change, if one is queued: found by a scan while the queue is
  /// short, from the index (built now if need be) once it is long.
  private mutating func position(of key: Key) -> Int? {
    if index == nil, slots.count - head > Self.scanLimit { index = Index(slots, from: head) }
    if let index { return index.positions[key] }
    return slots[head...].lastIndex { slot in
      guard case .change(let topic, let change)? = slot else { return false }
      return change.cardID == key.cardID && topic == key.topic
    }
  }

  /// An empty queue holds no storage (see `compactIfSparse()`); the first entry of a burst
  /// makes room for a few, so that the next ones (a commit usually brings a subscriber more
  /// than one change) do not grow the slots one allocation at a time.
  private mutating func reserveIfEmpty() {
    guard slots.isEmpty else { return }
    slots.reserveCapacity(Self.burstCapacity)
  }

  /// The entries an empty queue makes room for at its first.
  private static let burstCapacity = 8

  private mutating func compactIfSparse() {
    if entryCount == 0 {
      // An empty queue holds no storage: most subscribers are idle most of the time, and their
      // memory, not an allocation per burst, is what a broker with many of them runs out of.
      slots = []
      head = 0
      index = nil
      return
    }
    guard head > 1024 || slots.count - head > 2 * entryCount + 1024 else { return }
    slots = slots[head...].filter { $0 != nil }
    head = 0
    // The slots moved: an index there was is rebuilt, as a lookup would need it again.
    if index != nil { index = Index(slots, from: 0) }
  }

  /// Tables over a long queue's entries: the slot of each card queued as a change of its own,
  /// each topic's number of entries, and its number of runs.
  private struct Index {
    var positions: [Key: Int] = [:]
    var perTopic: [String: Int] = [:]
    var runsPerTopic: [String: Int] = [:]

    /// The tables of the entries in `slots` from `head`.
    init(_ slots: [Entry?], from head: Int) {
      for position in head..<slots.count {
        if let entry = slots[position] { record(entry, at: position) }
      }
    }

    mutating func record(_ entry: Entry, at position: Int) {
      switch entry {
      case .change(let topic, let change): positions[Key(topic: topic, cardID: change.cardID)] = position
      case .run(let topic, _, _): runsPerTopic.changeValue(forKey: topic, default: 0) { $0 += 1 }
      case .whole: break
      }
      perTopic.changeValue(forKey: entry.topic, default: 0) { $0 += 1 }
    }

    mutating func forget(_ entry: Entry) {
      switch entry {
      case .change(let topic, let change): positions[Key(topic: topic, cardID: change.cardID)] = nil
      case .run(let topic, _, _): Self.decrement(topic, in: &runsPerTopic)
      case .whole: break
      }
      Self.decrement(entry.topic, in: &perTopic)
    }

    /// Counts one less for `topic`, keeping no zero counts.
    private static func decrement(_ topic: String, in counts: inout [String: Int]) {
      if let count = counts.removeValue(forKey: topic), count > 1 { counts[topic] = count - 1 }
    }
  }
}
