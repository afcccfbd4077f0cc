public import PushlineWire

/// The data a card renders (`pushline.tracker.TrackerCardPayload`): one section per card kind;
/// exactly one is expected, and new card kinds add sections.
///
/// The sections live in copy-on-write storage: together they are several hundred bytes, and a
/// payload is copied whenever a card is — into arrays, through optional bindings, across
/// decode and encode — so the value itself stays one reference wide, and decoding fills the
/// sections in place.
public struct TrackerCardPayload: ReflectableMessage {
  public static let protoName = "pushline.tracker.TrackerCardPayload"

  /// The sections. Shared between copies of a payload until one of them is mutated.
  ///
  /// Exclusivity is not checked dynamically: only the payload that owns the storage uniquely
  /// mutates it (through `uniqueStorage()`), one property access at a time, so the checks
  /// could never fire and would cost more than the encoding they guard.
  final class Storage {
    @exclusivity(unchecked) var trackerRecentTripsCard: TrackerRecentTripsCard?
    @exclusivity(unchecked) var trackerDailyEarningsCard: TrackerDailyEarningsCard?
    @exclusivity(unchecked) var trackerWeeklyEarningsCard: TrackerWeeklyEarningsCard?
    @exclusivity(unchecked) var trackerDxGyProgressCard: TrackerDxGyProgressCard?
    @exclusivity(unchecked) var trackerDxGyCompletionCard: TrackerDxGyCompletionCard?

    init() {}

    init(copying other: Storage) {
      trackerRecentTripsCard = other.trackerRecentTripsCard
      trackerDailyEarningsCard = other.trackerDailyEarningsCard
      trackerWeeklyEarningsCard = other.trackerWeeklyEarningsCard
      trackerDxGyProgressCard = other.trackerDxGyProgressCard
      trackerDxGyCompletionCard = other.trackerDxGyCompletionCard
    }
  }

  private var storage = Storage()
  public var unknownFields = UnknownFields()

  public init() {}

  /// The storage, copied first if another payload shares it.
  private mutating func uniqueStorage() -> Storage {
    if !isKnownUniquelyReferenced(&storage) { storage = Storage(copying: storage) }
    return storage
  }

  /// The last trip.
  public var trackerRecentTripsCard: TrackerRecentTripsCard? {
    get { storage.trackerRecentTripsCard }
    set { uniqueStorage().trackerRecentTripsCard = newValue }
  }

  /// Today's summary.
  public var trackerDailyEarningsCard: TrackerDailyEarningsCard? {
    get { storage.trackerDailyEarningsCard }
    set { uniqueStorage().trackerDailyEarningsCard = newValue }
  }

  /// This week's summary.
  public var trackerWeeklyEarningsCard: TrackerWeeklyEarningsCard? {
    get { storage.trackerWeeklyEarningsCard }
    set { uniqueStorage().trackerWeeklyEarningsCard = newValue }
  }

  /// A quest in progress.
  public var trackerDxGyProgressCard: TrackerDxGyProgressCard? {
    get { storage.trackerDxGyProgressCard }
    set { uniqueStorage().trackerDxGyProgressCard = newValue }
  }

  /// A quest completed.
  public var trackerDxGyCompletionCard: TrackerDxGyCompletionCard? {
    get { storage.trackerDxGyCompletionCard }
    set { uniqueStorage().trackerDxGyCompletionCard = newValue }
  }

  public func encodedSize() -> Int {
    WireSize.field(storage.trackerRecentTripsCard) &+ WireSize.field(storage.trackerDailyEarningsCard)
      &+ WireSize.field(storage.trackerWeeklyEarningsCard) &+ WireSize.field(storage.trackerDxGyProgressCard)
      &+ WireSize.field(storage.trackerDxGyCompletionCard) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x2A, storage.trackerDxGyCompletionCard)
    writer.write(0x22, storage.trackerDxGyProgressCard)
    writer.write(0x1A, storage.trackerWeeklyEarningsCard)
    writer.write(0x12, storage.trackerDailyEarningsCard)
    writer.write(0x0A, storage.trackerRecentTripsCard)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    let storage = uniqueStorage()
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x0A: try reader.readMessage(into: &storage.trackerRecentTripsCard)
      case 0x12: try reader.readMessage(into: &storage.trackerDailyEarningsCard)
      case 0x1A: try reader.readMessage(into: &storage.trackerWeeklyEarningsCard)
      case 0x22: try reader.readMessage(into: &storage.trackerDxGyProgressCard)
      case 0x2A: try reader.readMessage(into: &storage.trackerDxGyCompletionCard)
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if let path = storage.trackerRecentTripsCard?.missingRequiredField { return "trackerRecentTripsCard.\(path)" }
    if let path = storage.trackerDailyEarningsCard?.missingRequiredField { return "trackerDailyEarningsCard.\(path)" }
    if let path = storage.trackerWeeklyEarningsCard?.missingRequiredField { return "trackerWeeklyEarningsCard.\(path)" }
    if let path = storage.trackerDxGyProgressCard?.missingRequiredField { return "trackerDxGyProgressCard.\(path)" }
    if let path = storage.trackerDxGyCompletionCard?.missingRequiredField { return "trackerDxGyCompletionCard.\(path)" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .optional(1, "trackerRecentTripsCard", \.trackerRecentTripsCard),
    .optional(2, "trackerDailyEarningsCard", \.trackerDailyEarningsCard),
    .optional(3, "trackerWeeklyEarningsCard", \.trackerWeeklyEarningsCard),
    .optional(4, "trackerDxGyProgressCard", \.trackerDxGyProgressCard),
    .optional(5, "trackerDxGyCompletionCard", \.trackerDxGyCompletionCard),
  ]
}

extension TrackerCardPayload: Hashable {
  public static func == (lhs: Self, rhs: Self) -> Bool {
    if lhs.unknownFields != rhs.unknownFields { return false }
    if lhs.storage === rhs.storage { return true }
    return lhs.storage.trackerRecentTripsCard == rhs.storage.trackerRecentTripsCard
      && lhs.storage.trackerDailyEarningsCard == rhs.storage.trackerDailyEarningsCard
      && lhs.storage.trackerWeeklyEarningsCard == rhs.storage.trackerWeeklyEarningsCard
      && lhs.storage.trackerDxGyProgressCard == rhs.storage.trackerDxGyProgressCard
      && lhs.storage.trackerDxGyCompletionCard == rhs.storage.trackerDxGyCompletionCard
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(storage.trackerRecentTripsCard)
    hasher.combine(storage.trackerDailyEarningsCard)
    hasher.combine(storage.trackerWeeklyEarningsCard)
    hasher.combine(storage.trackerDxGyProgressCard)
    hasher.combine(storage.trackerDxGyCompletionCard)
    hasher.combine(unknownFields)
  }
}

// Sendable although `Storage` is a mutable class: it is copy-on-write, so an instance that two
// payloads share is never mutated — every mutation goes through `uniqueStorage()` first.
extension TrackerCardPayload: @unchecked Sendable {}
