public import PushlineWire

/// A tracker card kept as its encoding, checked once when it arrives: what the broker stores,
/// commits and sends on, so that a card published once is never decoded into its fields nor
/// encoded again on its way to subscribers (a decoded card is a tree of allocations, freed
/// again when a newer version replaces it).
///
/// Its wire form is the card's, byte for byte, unknown fields included in place. The bytes
/// and the fields read from them share one allocation, so a copy — the broker makes several
/// per card, into records, batches and queues — costs one retain.
public struct EncodedCard: CardRepresentation, @unchecked Sendable {
  // @unchecked: the storage is a ManagedBuffer, never Sendable to the compiler, but written
  // only by the card that holds its one reference (being made or decoded), before any other
  // card shares it; a card shares it as it would a value.

  /// The proto name of the card it holds: `pushline.tracker.TrackerCard`.
  public static let protoName = TrackerCard.protoName

  private var storage: Storage

  /// An empty card: no fields, so its required fields are missing.
  public init() {
    storage = Self.empty
  }

  /// The encoding of `card`.
  public init(_ card: TrackerCard) {
    let bytes = card.serializedBytes()
    var header = Header(cardID: card.cardID, expiresAt: card.expiresAt)
    // An incomplete card keeps its decoded form, which names what is missing.
    if card.isInitialized { header.present = .max } else { header.decoded = card }
    storage = bytes.withUnsafeBytes { Storage.make(copying: $0, header: header) }
  }

  /// The card's identifier.
  public var cardID: String { storage.header.cardID }
  /// The second at which clients drop the card.
  public var expiresAt: Int64? { storage.header.expiresAt }

  /// The first required field the card lacks, as ``TrackerCard/missingRequiredField`` names
  /// it; `nil` when it has them all.
  public var missingRequiredField: String? {
    if let decoded = storage.header.decoded { return decoded.missingRequiredField }
    if Self.shape.isComplete(storage.header.present) { return nil }
    // Only a card without all its top-level fields gets here: decoding it names the first.
    return (try? decoded())?.missingRequiredField
  }

  /// The card's encoding, copied out.
  public var bytes: [UInt8] { withUnsafeBytes { [UInt8]($0) } }

  /// Calls `body` with the card's encoding, valid only during the call.
  public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
    try storage.withUnsafeMutablePointerToElements { try body(UnsafeRawBufferPointer(start: $0, count: storage.header.count)) }
  }

  /// The card, decoded (its required fields are not enforced: see ``missingRequiredField``).
  ///
  /// - Throws: Never for a card that was decoded (its bytes were checked then) or built from
  ///   a ``TrackerCard``.
  public func decoded() throws(WireDecodingError) -> TrackerCard {
    if let decoded = storage.header.decoded { return decoded }
    var card = TrackerCard()
    try withUnsafeBytes { bytes in Result { () throws(WireDecodingError) in try card.merge(serializedBytes: bytes) } }.get()
    return card
  }

  /// Unknown fields stay in the encoding, where they were: this view of them is always empty,
  /// and setting it changes nothing.
  public var unknownFields: UnknownFields {
    get { UnknownFields() }
    set {}
  }

  public func encodedSize() -> Int { storage.header.count }

  public func encode(to writer: inout WireWriter) {
    withUnsafeBytes { writer.writeRaw($0) }
  }

  /// Appends the occurrence's bytes to the card's — concatenated encodings decode to the
  /// merged card, as protobuf merges occurrences — and checks them: cheaply when the
  /// occurrence certainly decodes, by decoding it into the card's decoded form otherwise,
  /// which then stands for the card (its verdict, its error, its fields). Each occurrence is
  /// read once, whatever came before it.
  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    let (depth, start) = (reader.remainingDepth, reader.offset)
    let occurrence = reader.readRemainingBytes()
    guard !occurrence.isEmpty else { return }  // merging nothing changes nothing
    let startInBytes = storage.header.count
    append(occurrence)
    if storage.header.decoded == nil {
      var checker = WireReader(occurrence, maxDepth: depth)
      if let present = Self.shape.requiredFieldsPresent(in: &checker) {
        storage.header.present |= present
        return readKeyFields(of: occurrence)
      }
    }
    do {
      try decodeUncertain(occurrence, startInBytes: startInBytes, depth: depth)
    } catch {
      var moved = error
      moved.offset += start
      throw moved
    }
  }

  /// Merges `occurrence` into the card's decoded form, decoding the bytes before it first if
  /// the card has none yet. Errors are at offsets into `occurrence`.
  private mutating func decodeUncertain(_ occurrence: UnsafeRawBufferPointer, startInBytes: Int, depth: Int) throws(WireDecodingError) {
    var card: TrackerCard
    if let decoded = storage.header.decoded {
      card = decoded
    } else {
      // The occurrences before this one were checked: they decode without error.
      card = TrackerCard()
      storage.withUnsafeMutablePointerToElements { elements in
        var reader = WireReader(UnsafeRawBufferPointer(start: elements, count: startInBytes), maxDepth: depth)
        try? card.decodeFields(from: &reader)
      }
    }
    var reader = WireReader(occurrence, maxDepth: depth)
    try card.decodeFields(from: &reader)
    storage.header.cardID = card.cardID
    storage.header.expiresAt = card.expiresAt
    storage.header.decoded = card
  }

  /// Appends `bytes` to the card's, in place when the storage is this card's alone and has
  /// room; otherwise in a new storage, with room to spare if the card already had bytes (a
  /// card sent in many occurrences is copied a logarithmic number of times, not once each).
  private mutating func append(_ bytes: UnsafeRawBufferPointer) {
    let count = storage.header.count
    if isKnownUniquelyReferenced(&storage), storage.header.capacity - count >= bytes.count {
      storage.withUnsafeMutablePointerToElements { elements in
        (elements + count).initialize(from: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), count: bytes.count)
      }
      storage.header.count += bytes.count
      return
    }
    let capacity = count == 0 ? bytes.count : max(count + bytes.count, 2 * count)
    let grown = Storage.make(capacity: capacity, header: storage.header)
    grown.withUnsafeMutablePointerToElements { elements in
      storage.withUnsafeMutablePointerToElements { elements.initialize(from: $0, count: count) }
      (elements + count).initialize(from: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), count: bytes.count)
    }
    grown.header.count = count + bytes.count
    storage = grown
  }

  /// Takes ``cardID`` and ``expiresAt`` from a checked occurrence that sets them (the last
  /// occurrence of each wins, as in a decode).
  private mutating func readKeyFields(of occurrence: UnsafeRawBufferPointer) {
    var reader = WireReader(occurrence, maxDepth: .max)
    do throws(WireDecodingError) {
      while !reader.isAtEnd {
        let tagStart = reader.offset
        switch try reader.readTag() {
        case 0x0A: storage.header.cardID = try reader.readString()
        case 0x30: storage.header.expiresAt = try reader.readInt64()
        case let tag: try reader.skipField(tag: tag, startingAt: tagStart)
        }
      }
    } catch {
      // Not reached: the occurrence was checked before.
    }
  }

  /// The shape every card is checked against.
  private static let shape = MessageShape.of(TrackerCard.self)

  /// The storage of every empty card (immutable, as every shared storage: see the type's note).
  nonisolated(unsafe) private static let empty = Storage.make(capacity: 0, header: Header())

  public static func == (lhs: Self, rhs: Self) -> Bool {
    lhs.storage === rhs.storage || lhs.withUnsafeBytes { left in rhs.withUnsafeBytes { left.elementsEqual($0) } }
  }

  public func hash(into hasher: inout Hasher) { withUnsafeBytes { hasher.combine(bytes: $0) } }

  /// What is kept with the bytes.
  private struct Header {
    /// How many bytes the encoding has, and how many the storage has room for.
    var count = 0
    var capacity = 0
    var cardID = ""
    var expiresAt: Int64?
    /// The top-level required fields the checked occurrences set (see ``MessageShape``).
    var present: UInt64 = 0
    /// The card decoded, once an occurrence could not be checked cheaply (or a card built
    /// incomplete): then it, not ``present``, says which required field is missing.
    var decoded: TrackerCard?
  }

  /// The header and the bytes in one allocation.
  private final class Storage: ManagedBuffer<Header, UInt8> {
    static func make(capacity: Int, header: Header) -> Storage {
      let storage = unsafeDowncast(create(minimumCapacity: capacity) { _ in header }, to: Storage.self)
      storage.header.count = 0
      storage.header.capacity = capacity
      return storage
    }

    static func make(copying bytes: UnsafeRawBufferPointer, header: Header) -> Storage {
      let storage = make(capacity: bytes.count, header: header)
      storage.withUnsafeMutablePointerToElements { elements in
        if let base = bytes.baseAddress { elements.initialize(from: base.assumingMemoryBound(to: UInt8.self), count: bytes.count) }
      }
      storage.header.count = bytes.count
      return storage
    }
  }
}

/// A change whose card stays encoded: what a broker stores, queues and sends.
public typealias EncodedCardChange = CardChangeMessage<EncodedCard>

/// A publish whose cards stay encoded: what a broker decodes a publish into.
public typealias EncodedPublishRequest = PublishRequestMessage<EncodedCard>

/// An update whose cards stay encoded: what a broker sends.
public typealias EncodedTopicUpdate = TopicUpdateMessage<EncodedCard>
