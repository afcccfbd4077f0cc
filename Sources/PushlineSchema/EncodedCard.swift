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
  // only while it is made, before any card holds it; a card shares it as it would a value.
  public static let protoName = TrackerCard.protoName

  private var storage: Storage

  /// An empty card: no fields, so its required fields are missing.
  public init() {
    storage = Self.empty
  }

  /// The encoding of `card`.
  public init(_ card: TrackerCard) {
    let bytes = card.serializedBytes()
    storage = bytes.withUnsafeBytes { bytes in
      Storage.make(
        bytes, Header(cardID: card.cardID, expiresAt: card.expiresAt, missingRequiredField: card.missingRequiredField))
    }
  }

  /// The card's identifier.
  public var cardID: String { storage.header.cardID }
  /// The second at which clients drop the card.
  public var expiresAt: Int64? { storage.header.expiresAt }
  public var missingRequiredField: String? { storage.header.missingRequiredField }

  /// The card's encoding, copied out.
  public var bytes: [UInt8] { withUnsafeBytes { [UInt8]($0) } }

  /// Calls `body` with the card's encoding, valid only during the call.
  public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
    try storage.withUnsafeMutablePointerToElements { try body(UnsafeRawBufferPointer(start: $0, count: storage.header.count)) }
  }

  /// The card, decoded.
  ///
  /// - Throws: Never for a card that was checked when it was decoded or built from a
  ///   ``TrackerCard``; the error says what is wrong otherwise.
  public func decoded() throws(WireDecodingError) -> TrackerCard {
    try withUnsafeBytes { bytes in Result { () throws(WireDecodingError) in try TrackerCard(serializedBytes: bytes) } }.get()
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

  /// Appends the card's bytes — concatenated encodings decode to the merged card, as protobuf
  /// merges occurrences — and checks them all: cheaply when every part is complete, by
  /// decoding the card otherwise, whose verdict and error then stand.
  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    let depth = reader.remainingDepth
    // Where this occurrence's bytes start, in the card's bytes and in the input being decoded.
    let (startInBytes, startInInput) = (storage.header.count, reader.offset)
    let occurrence = reader.readRemainingBytes()
    let merged = storage.header.count == 0 ? Storage.make(occurrence, Header()) : concatenated(with: occurrence)
    let checked = merged.withUnsafeMutablePointerToElements { elements in
      var checker = WireReader(UnsafeRawBufferPointer(start: elements, count: merged.header.count), maxDepth: depth)
      return Self.shape.certainlyDecodes(&checker)
    }
    do {
      merged.header = checked ? Self.keyFields(of: merged) : try Self.decodeToCheck(merged, depth: depth)
    } catch {
      // The offset, from the start of the card's bytes, into the input (an earlier
      // occurrence's bytes are elsewhere in it: their errors point at this one's start).
      var moved = error
      moved.offset = startInInput + max(0, error.offset - startInBytes)
      throw moved
    }
    storage = merged
  }

  /// The card's bytes followed by `occurrence`'s, in a new allocation.
  private func concatenated(with occurrence: UnsafeRawBufferPointer) -> Storage {
    withUnsafeBytes { bytes in
      var joined = [UInt8](bytes)
      joined.append(contentsOf: occurrence)
      return joined.withUnsafeBytes { Storage.make($0, Header()) }
    }
  }

  /// The shape every card is checked against.
  private static let shape = MessageShape.of(TrackerCard.self)

  /// The storage of every empty card (immutable, as every storage: see the type's note).
  nonisolated(unsafe) private static let empty = Storage.make(UnsafeRawBufferPointer(start: nil, count: 0), Header())

  /// The fields read from `storage`'s checked bytes (the last occurrence of each wins, as in
  /// a decode).
  private static func keyFields(of storage: Storage) -> Header {
    var header = Header(count: storage.header.count, missingRequiredField: nil)
    storage.withUnsafeMutablePointerToElements { elements in
      var reader = WireReader(UnsafeRawBufferPointer(start: elements, count: header.count), maxDepth: .max)
      do throws(WireDecodingError) {
        while !reader.isAtEnd {
          let tagStart = reader.offset
          switch try reader.readTag() {
          case 0x0A: header.cardID = try reader.readString()
          case 0x30: header.expiresAt = try reader.readInt64()
          case let tag: try reader.skipField(tag: tag, startingAt: tagStart)
          }
        }
      } catch {
        // Not reached: the bytes were checked before.
      }
    }
    return header
  }

  /// Decodes the card in `storage` to learn what the cheap check could not tell: whether its
  /// bytes are malformed (thrown) or incomplete.
  private static func decodeToCheck(_ storage: Storage, depth: Int) throws(WireDecodingError) -> Header {
    let count = storage.header.count
    let card = try storage.withUnsafeMutablePointerToElements { elements in
      Result { () throws(WireDecodingError) -> TrackerCard in
        var card = TrackerCard()
        var reader = WireReader(UnsafeRawBufferPointer(start: elements, count: count), maxDepth: depth)
        try card.decodeFields(from: &reader)
        return card
      }
    }.get()
    return Header(count: count, cardID: card.cardID, expiresAt: card.expiresAt, missingRequiredField: card.missingRequiredField)
  }

  public static func == (lhs: Self, rhs: Self) -> Bool {
    lhs.storage === rhs.storage || lhs.withUnsafeBytes { left in rhs.withUnsafeBytes { left.elementsEqual($0) } }
  }

  public func hash(into hasher: inout Hasher) { withUnsafeBytes { hasher.combine(bytes: $0) } }

  /// What is kept with the bytes.
  private struct Header {
    /// How many bytes the encoding has.
    var count = 0
    var cardID = ""
    var expiresAt: Int64?
    var missingRequiredField: String? = "cardID"
  }

  /// The header and the bytes in one allocation, written only while being made.
  private final class Storage: ManagedBuffer<Header, UInt8> {
    static func make(_ bytes: UnsafeRawBufferPointer, _ header: Header) -> Storage {
      let storage = unsafeDowncast(create(minimumCapacity: bytes.count) { _ in header }, to: Storage.self)
      storage.header.count = bytes.count
      storage.withUnsafeMutablePointerToElements { elements in
        if let base = bytes.baseAddress { elements.initialize(from: base.assumingMemoryBound(to: UInt8.self), count: bytes.count) }
      }
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
