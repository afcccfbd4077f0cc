import PushlineSchema

/// The 200-byte tracker card every publish carries, to Pushline and to nats-server alike:
/// a daily-earnings card whose `lastUpdatedAt` is the publish time in nanoseconds of
/// CLOCK_MONOTONIC, so a subscriber can compute publish→deliver latency.
enum BenchCard {
  /// The encoded size the template is padded to (with a typical timestamp).
  static let targetSize = 200

  /// The card, padded so that it encodes to ``targetSize`` bytes.
  static let template: TrackerCard = {
    var card = make(title: "Today")
    let size = card.serializedBytes().count
    if size < targetSize { card = make(title: "Today" + String(repeating: " ", count: targetSize - size)) }
    return card
  }()

  private static func make(title: String) -> TrackerCard {
    var daily = TrackerDailyEarningsCard(title: title)
    daily.formattedTotal = "$182.37"
    daily.total = Money(currencyCode: "USD", minorUnits: 18_237)
    daily.tripCount = 14
    daily.onlineSeconds = 22_800
    daily.formattedOnlineTime = "6 h 20 min"
    daily.dayStartsAt = 1_763_769_600
    daily.callToAction = "See today's trips"
    var card = TrackerCard(cardID: "card-0", priority: 10.5, isValid: true)
    card.payload = TrackerCardPayload()
    card.payload?.trackerDailyEarningsCard = daily
    card.cardType = .browse
    card.expiresAt = 1_763_830_800
    card.lastUpdatedAt = ProcessStats.monotonicNanos()
    return card
  }

  /// Card IDs used round-robin within a topic.
  static func cardID(_ number: Int) -> String { "card-\(number)" }

  /// The card `cardID` stamped with `nanos`.
  static func card(cardID: String, stampNanos nanos: Int64) -> TrackerCard {
    var card = template
    card.cardID = cardID
    card.lastUpdatedAt = nanos
    return card
  }
}

/// A forward-only protobuf scanner over raw bytes: just enough to count a `TopicUpdate`'s
/// changes and read offsets and timestamps without materializing messages, so the load
/// generator spends as little CPU per delivery on Pushline as on nats-server.
struct ProtoScanner {
  let bytes: UnsafeRawBufferPointer
  var position = 0

  init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

  var isAtEnd: Bool { position >= bytes.count }

  mutating func varint() -> UInt64? {
    var result: UInt64 = 0
    var shift: UInt64 = 0
    while position < bytes.count, shift < 64 {
      let byte = bytes[position]
      position += 1
      result |= UInt64(byte & 0x7F) << shift
      if byte < 0x80 { return result }
      shift += 7
    }
    return nil
  }

  /// The next field's number and wire type.
  mutating func tag() -> (field: UInt64, wire: UInt64)? {
    guard let tag = varint() else { return nil }
    return (tag >> 3, tag & 7)
  }

  /// A length-delimited field's bytes.
  mutating func lengthDelimited() -> UnsafeRawBufferPointer? {
    guard let length = varint(), position + Int(length) <= bytes.count else { return nil }
    defer { position += Int(length) }
    return UnsafeRawBufferPointer(rebasing: bytes[position..<position + Int(length)])
  }

  /// Skips a field of `wire` type; false on malformed input.
  mutating func skip(wire: UInt64) -> Bool {
    switch wire {
    case 0: return varint() != nil
    case 1: position += 8
    case 2: return lengthDelimited() != nil
    case 5: position += 4
    default: return false
    }
    return position <= bytes.count
  }
}

/// What a subscriber needs from one `TopicUpdate`.
struct TopicUpdateSummary {
  var changes = 0
  var epoch: Int64 = 0
  var throughOffset: Int64 = 0
  var isSnapshot = false
  /// The update leaves the client complete at `throughOffset`: a position to resume from.
  var isComplete = false

  /// Scans an encoded `TopicUpdate`; `stamp` gets each upserted card's `lastUpdatedAt`.
  /// `nil` when the bytes are malformed.
  static func scan(_ bytes: UnsafeRawBufferPointer, stamp: (Int64) -> Void) -> TopicUpdateSummary? {
    var summary = TopicUpdateSummary()
    var scanner = ProtoScanner(bytes)
    while !scanner.isAtEnd {
      guard let (field, wire) = scanner.tag() else { return nil }
      switch (field, wire) {
      case (2, 0):
        guard let epoch = scanner.varint() else { return nil }
        summary.epoch = Int64(bitPattern: epoch)
      case (3, 0):
        summary.isSnapshot = scanner.varint() == 1
      case (8, 0):
        summary.isComplete = scanner.varint() == 1
      case (4, 2):
        guard let change = scanner.lengthDelimited() else { return nil }
        summary.changes += 1
        if let nanos = cardStamp(inChange: change) { stamp(nanos) }
      case (5, 0):
        guard let offset = scanner.varint() else { return nil }
        summary.throughOffset = Int64(bitPattern: offset)
      default:
        guard scanner.skip(wire: wire) else { return nil }
      }
    }
    return summary
  }

  /// The card's `lastUpdatedAt` in an encoded `CardChange`.
  private static func cardStamp(inChange bytes: UnsafeRawBufferPointer) -> Int64? {
    var scanner = ProtoScanner(bytes)
    while !scanner.isAtEnd {
      guard let (field, wire) = scanner.tag() else { return nil }
      if field == 2, wire == 2 {
        guard let card = scanner.lengthDelimited() else { return nil }
        return stamp(inCard: card)
      }
      guard scanner.skip(wire: wire) else { return nil }
    }
    return nil
  }

  /// `lastUpdatedAt` (field 7) of an encoded `TrackerCard`.
  static func stamp(inCard bytes: UnsafeRawBufferPointer) -> Int64? {
    var scanner = ProtoScanner(bytes)
    while !scanner.isAtEnd {
      guard let (field, wire) = scanner.tag() else { return nil }
      if field == 7, wire == 0 { return scanner.varint().map { Int64(bitPattern: $0) } }
      guard scanner.skip(wire: wire) else { return nil }
    }
    return nil
  }
}
