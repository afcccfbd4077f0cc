import PushlineSchema

/// A publish's changes — each card ID and its card's bytes, or its removal, in order — reduced
/// to 64 bits, and kept with the publish's idempotency record: a retry with the same key must
/// carry the same changes. Without it, a key reused for other changes was answered as a replay
/// of the first publish, and the new changes were dropped while the publisher was told they
/// were applied. The hash is stable across processes and restarts (it is stored), and meant to
/// catch a key reused by mistake, not a publisher forging collisions against itself.
struct PublishFingerprint: Hashable, Sendable {
  let value: Int64

  /// The fingerprint of changes given as (card ID, card) pairs, a removal's card `nil`.
  init(_ changes: some Sequence<(cardID: String, card: EncodedCard?)>) {
    var hash = Hash()
    for change in changes {
      var cardID = change.cardID
      cardID.withUTF8 { hash.add(UnsafeRawBufferPointer($0)) }
      hash.add(word: UInt64(cardID.utf8.count))
      if let card = change.card {
        card.withUnsafeBytes { hash.add($0) }
        hash.add(word: UInt64(card.encodedSize()) | 1 << 63)
      } else {
        hash.add(word: 0)  // a removal
      }
    }
    value = Int64(bitPattern: hash.state)
  }

  /// The fingerprint of `request`'s changes.
  init(of request: EncodedPublishRequest) {
    self.init(request.changes.lazy.map { (cardID: $0.cardID, card: $0.card) })
  }

  /// The fingerprint of a publish's records, as they were assigned offsets.
  init(of records: [CardRecord]) {
    self.init(records.lazy.map { (cardID: $0.cardID, card: $0.card) })
  }

  /// Eight bytes at a time, multiplied and folded (as FxHash and wyhash do): fast, and stable
  /// wherever it runs (the bytes are read little-endian).
  private struct Hash {
    var state: UInt64 = 0x243F_6A88_85A3_08D3

    mutating func add(word: UInt64) {
      state = (state ^ word) &* 0x9E37_79B9_7F4A_7C15
      state ^= state >> 29
    }

    mutating func add(_ bytes: UnsafeRawBufferPointer) {
      var index = 0
      while index + 8 <= bytes.count {
        add(word: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)))
        index += 8
      }
      var tail: UInt64 = 0
      for (shift, byte) in bytes[index...].enumerated() { tail |= UInt64(byte) << (8 * UInt64(shift)) }
      add(word: tail)
    }
  }
}
