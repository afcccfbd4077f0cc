import PushlineRPC
public import PushlineSchema

/// A subscription's pending deliveries, coalesced by (topic, cardID): a newer version of a
/// queued card replaces the older one and moves to the back, so the queue never holds more
/// than one entry per card and per-topic offsets stay increasing from front to back.
///
/// Why to the back: sending the newer version in the older one's place would deliver an
/// offset above the changes queued between them, and a connection lost right after would let
/// the client resume past changes it never saw.
public struct OutboundQueue: Sendable {
  private struct Key: Hashable {
    var topic: String
    var cardID: String
  }

  private enum Entry {
    case change(topic: String, EncodedCardChange)
    case snapshot(EncodedTopicUpdate)

    var topic: String {
      switch self {
      case .change(let topic, _): topic
      case .snapshot(let update): update.topic
      }
    }
  }

  /// Entries in delivery order; a replaced entry leaves a `nil` hole behind, skipped when
  /// taken and compacted away once holes outnumber entries.
  private var slots: [Entry?] = []
  private var head = 0
  /// Where each queued card is and how many entries each topic has, once the queue spans more
  /// than ``scanLimit`` slots; a shorter queue — a subscriber keeping up, the common case — is
  /// scanned instead, and costs no tables.
  private var index: Index?
  /// How many card changes are queued outside snapshots: what the queue's bound limits.
  public private(set) var changeCount = 0
  /// How many entries (changes and snapshots) are queued.
  private var entryCount = 0
  /// How many queued changes a newer version has replaced since the queue was created.
  public private(set) var coalescedCount = 0

  /// The most entries a lookup scans before a table is kept instead: a queue's slots before it
  /// keeps an ``Index``, a take's updates before it keeps their table.
  private static let scanLimit = 16

  /// An empty queue.
  public init() {}

  /// Whether nothing is queued.
  public var isEmpty: Bool { entryCount == 0 }

  /// Whether entries for `topic` are queued.
  public func hasEntries(for topic: String) -> Bool {
    if let index { return index.perTopic[topic, default: 0] > 0 }
    return slots[head...].contains { $0?.topic == topic }
  }

  /// Queues `change` (which has its offset) for `topic`, replacing a queued change of the
  /// same card; returns whether it replaced one.
  @discardableResult
  public mutating func append(_ change: EncodedCardChange, topic: String) -> Bool {
    reserveIfEmpty()
    return appendReplacingQueued(change, topic: topic)
  }

  /// Queues `changes` of `topic` — distinct cards in offset order, as a commit's coalesced
  /// changes are — each replacing a queued change of its card, while the queue holds fewer
  /// than `maxChanges` changes; returns how many were queued, and how many of those replaced
  /// one. A topic with nothing queued (a subscriber keeping up) has nothing to replace: its
  /// changes are queued with no lookup (so two changes of one card among them would both stay).
  public mutating func append(
    contentsOf changes: ArraySlice<EncodedCardChange>, topic: String, whileFewerThan maxChanges: Int
  ) -> (appended: Int, coalesced: Int) {
    guard !changes.isEmpty else { return (0, 0) }
    reserveIfEmpty()
    let mayReplace = hasEntries(for: topic)
    var (appended, coalesced) = (0, 0)
    for change in changes {
      guard changeCount < maxChanges else { break }
      if mayReplace {
        if appendReplacingQueued(change, topic: topic) { coalesced += 1 }
      } else {
        appendSlot(.change(topic: topic, change))
      }
      appended += 1
    }
    return (appended, coalesced)
  }

  /// Queues `change`, replacing a queued change of its card; whether it replaced one.
  private mutating func appendReplacingQueued(_ change: EncodedCardChange, topic: String) -> Bool {
    var coalesced = false
    if let position = position(of: Key(topic: topic, cardID: change.cardID)) {
      remove(at: position)
      coalescedCount += 1
      coalesced = true
    }
    appendSlot(.change(topic: topic, change))
    return coalesced
  }

  /// Adds `entry` at the back.
  private mutating func appendSlot(_ entry: Entry) {
    slots.append(entry)
    if case .change = entry { changeCount += 1 }
    entryCount += 1
    indexLastSlot()
  }

  /// Queues a snapshot of its topic.
  public mutating func append(snapshot: EncodedTopicUpdate) {
    reserveIfEmpty()
    appendSlot(.snapshot(snapshot))
  }

  /// Drops everything queued for `topic` (it will be replaced by a snapshot).
  public mutating func removeAll(for topic: String) {
    guard hasEntries(for: topic) else { return }
    for position in head..<slots.count where slots[position]?.topic == topic {
      remove(at: position)
    }
    compactIfSparse()
  }

  /// Takes up to about `limit` changes, and about ``maxTakeBytes`` of cards, from the front
  /// (at least one entry), as one update per topic and run: a snapshot travels alone;
  /// consecutive changes of a topic share an update. `epoch(topic)` gives the epoch of changes;
  /// `throughOffset` is filled in by the caller.
  public mutating func take(limit: Int, epoch: (String) -> Int64) -> [EncodedTopicUpdate] {
    var updates: [EncodedTopicUpdate] = []
    var openUpdates = OpenUpdates()
    var taken = 0
    var bytes = 0
    while head < slots.count, taken < limit, bytes < Self.maxTakeBytes {
      defer { head += 1 }
      guard let entry = slots[head] else { continue }
      remove(at: head)
      switch entry {
      case .snapshot(let update):
        openUpdates.append(update, to: &updates)
        taken += max(1, update.changes.count)
        bytes += update.changes.reduce(0) { $0 + Self.size(of: $1) }
      case .change(let topic, let change):
        bytes += Self.size(of: change)
        if let index = openUpdates.index(of: topic, in: updates) {
          updates[index].changes.append(change)
        } else {
          var update = EncodedTopicUpdate(topic: topic, epoch: epoch(topic), throughOffset: 0)
          update.changes = [change]
          openUpdates.append(update, to: &updates)
        }
        taken += 1
      }
    }
    compactIfSparse()
    return updates
  }

  /// The card bytes a take gathers at most, past its first entry: large cards (up to
  /// `Broker.maxCardSize`) fill an update long before ``take(limit:epoch:)``'s change limit,
  /// which would otherwise let one update outgrow the protocol's 4 MiB message limit.
  public static let maxTakeBytes = 1 << 20

  /// What `change` adds to an update, about: its card and its ID.
  private static func size(of change: EncodedCardChange) -> Int {
    (change.card?.encodedSize() ?? 0) + change.cardID.utf8.count
  }

  /// Which update of a take a topic's next change joins: its topic's last, unless that is a
  /// snapshot (which travels alone). Found by a scan while the updates are few — a take
  /// usually makes one or two, and a table would be an allocation per take — and from a table
  /// once they are many.
  private struct OpenUpdates {
    private var table: [String: Int]?

    /// The index of the update `topic`'s next change joins, if any.
    func index(of topic: String, in updates: [EncodedTopicUpdate]) -> Int? {
      if let table { return table[topic] }
      guard let index = updates.lastIndex(where: { $0.topic == topic }), !updates[index].isSnapshot else { return nil }
      return index
    }

    /// Appends `update` to `updates`, keeping the table once there is one.
    mutating func append(_ update: EncodedTopicUpdate, to updates: inout [EncodedTopicUpdate]) {
      updates.append(update)
      if table == nil, updates.count > OutboundQueue.scanLimit {
        table = [:]
        for (index, update) in updates.enumerated() { table?[update.topic] = update.isSnapshot ? nil : index }
      } else if table != nil {
        table?[update.topic] = update.isSnapshot ? nil : updates.count - 1
      }
    }
  }

  private mutating func remove(at position: Int) {
    guard let entry = slots[position] else { return }
    slots[position] = nil
    entryCount -= 1
    index?.forget(entry)
    if case .change = entry { changeCount -= 1 }
  }

  /// The slot of `key`'s queued change, if one is queued.
  private func position(of key: Key) -> Int? {
    if let index { return index.positions[key] }
    return slots[head...].lastIndex { slot in
      guard case .change(let topic, let change)? = slot else { return false }
      return change.cardID == key.cardID && topic == key.topic
    }
  }

  /// Records the slot just appended in the index; builds the index once the queue spans more
  /// than a scan should cover.
  private mutating func indexLastSlot() {
    if index != nil, let entry = slots[slots.count - 1] {
      index?.record(entry, at: slots.count - 1)
    } else if slots.count - head > Self.scanLimit {
      index = Index(slots, from: head)
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
    index = slots.count > Self.scanLimit ? Index(slots, from: 0) : nil
  }

  /// Tables over a long queue's entries: the slot of each queued card, and each topic's
  /// number of entries.
  private struct Index {
    var positions: [Key: Int] = [:]
    var perTopic: [String: Int] = [:]

    /// The tables of the entries in `slots` from `head`.
    init(_ slots: [Entry?], from head: Int) {
      for position in head..<slots.count {
        if let entry = slots[position] { record(entry, at: position) }
      }
    }

    mutating func record(_ entry: Entry, at position: Int) {
      if case .change(let topic, let change) = entry { positions[Key(topic: topic, cardID: change.cardID)] = position }
      perTopic.changeValue(forKey: entry.topic, default: 0) { $0 += 1 }
    }

    mutating func forget(_ entry: Entry) {
      if case .change(let topic, let change) = entry { positions[Key(topic: topic, cardID: change.cardID)] = nil }
      if let count = perTopic.removeValue(forKey: entry.topic), count > 1 { perTopic[entry.topic] = count - 1 }
    }
  }
}
