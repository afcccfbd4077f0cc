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
    case change(topic: String, CardChange)
    case snapshot(TopicUpdate)

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
  private var positions: [Key: Int] = [:]
  private var perTopic: [String: Int] = [:]
  /// How many card changes are queued outside snapshots: what the queue's bound limits.
  public private(set) var changeCount = 0
  /// How many entries (changes and snapshots) are queued.
  private var entryCount = 0
  /// How many queued changes a newer version has replaced since the queue was created.
  public private(set) var coalescedCount = 0

  /// An empty queue.
  public init() {}

  /// Whether nothing is queued.
  public var isEmpty: Bool { entryCount == 0 }

  /// Whether entries for `topic` are queued.
  public func hasEntries(for topic: String) -> Bool { perTopic[topic, default: 0] > 0 }

  /// Queues `change` (which has its offset) for `topic`, replacing a queued change of the
  /// same card; returns whether it replaced one.
  @discardableResult
  public mutating func append(_ change: CardChange, topic: String) -> Bool {
    reserveIfEmpty()
    var coalesced = false
    let key = Key(topic: topic, cardID: change.cardID)
    if let position = positions[key] {
      remove(at: position)
      coalescedCount += 1
      coalesced = true
    }
    positions[key] = slots.count
    slots.append(.change(topic: topic, change))
    changeCount += 1
    entryCount += 1
    perTopic.changeValue(forKey: topic, default: 0) { $0 += 1 }
    return coalesced
  }

  /// Queues a snapshot of its topic.
  public mutating func append(snapshot: TopicUpdate) {
    reserveIfEmpty()
    slots.append(.snapshot(snapshot))
    entryCount += 1
    perTopic.changeValue(forKey: snapshot.topic, default: 0) { $0 += 1 }
  }

  /// Drops everything queued for `topic` (it will be replaced by a snapshot).
  public mutating func removeAll(for topic: String) {
    guard hasEntries(for: topic) else { return }
    for index in head..<slots.count where slots[index]?.topic == topic {
      remove(at: index)
    }
    compactIfSparse()
  }

  /// Takes up to about `limit` changes from the front, as one update per topic and run:
  /// a snapshot travels alone; consecutive changes of a topic share an update. `epoch(topic)`
  /// gives the epoch of changes; `throughOffset` is filled in by the caller.
  public mutating func take(limit: Int, epoch: (String) -> Int64) -> [TopicUpdate] {
    var updates: [TopicUpdate] = []
    var openUpdate: [String: Int] = [:]
    var taken = 0
    while head < slots.count, taken < limit {
      defer { head += 1 }
      guard let entry = slots[head] else { continue }
      remove(at: head)
      switch entry {
      case .snapshot(let update):
        updates.append(update)
        openUpdate[update.topic] = nil
        taken += max(1, update.changes.count)
      case .change(let topic, let change):
        if let index = openUpdate[topic] {
          updates[index].changes.append(change)
        } else {
          var update = TopicUpdate(topic: topic, epoch: epoch(topic), throughOffset: 0)
          update.changes = [change]
          openUpdate[topic] = updates.count
          updates.append(update)
        }
        taken += 1
      }
    }
    compactIfSparse()
    return updates
  }

  private mutating func remove(at index: Int) {
    guard let entry = slots[index] else { return }
    slots[index] = nil
    entryCount -= 1
    if let count = perTopic.removeValue(forKey: entry.topic), count > 1 { perTopic[entry.topic] = count - 1 }
    if case .change(let topic, let change) = entry {
      positions[Key(topic: topic, cardID: change.cardID)] = nil
      changeCount -= 1
    }
  }

  /// An empty queue holds no storage (see `compactIfSparse()`); the first entry of a burst
  /// makes room for a few, so that the next ones (a commit usually brings a subscriber more
  /// than one change) do not grow the tables one allocation at a time.
  private mutating func reserveIfEmpty() {
    guard slots.isEmpty else { return }
    slots.reserveCapacity(Self.burstCapacity)
    positions.reserveCapacity(Self.burstCapacity)
  }

  /// The entries an empty queue makes room for at its first.
  private static let burstCapacity = 8

  private mutating func compactIfSparse() {
    if entryCount == 0 {
      // An empty queue holds no storage: most subscribers are idle most of the time, and their
      // memory, not an allocation per burst, is what a broker with many of them runs out of.
      slots = []
      head = 0
      perTopic = [:]
      positions = [:]
      return
    }
    guard head > 1024 || slots.count - head > 2 * entryCount + 1024 else { return }
    slots = slots[head...].filter { $0 != nil }
    head = 0
    positions.removeAll(keepingCapacity: true)
    for (index, entry) in slots.enumerated() {
      if case .change(let topic, let change)? = entry { positions[Key(topic: topic, cardID: change.cardID)] = index }
    }
  }
}
