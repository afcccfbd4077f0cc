import Foundation

extension Broker {
  /// Why the broker refuses `key` as a card's ID or a publish's idempotency key (`name` says
  /// which, for the message), or `nil` when it takes it. Public so that a publisher can check
  /// every key of a publish in several batches before it sends the first, rather than have a
  /// later batch refused after the earlier ones were applied.
  ///
  /// Both are kept by SQLite storage as keys and compared by their bytes, so a key is 1 to
  /// ``maxKeySize`` bytes of UTF-8, has no NUL byte (GRDB binds and reads keys as C strings:
  /// two IDs that differ after a NUL would come back from a restart as one) and is in Unicode
  /// Normalization Form C (``isNormalized(_:)``).
  public static func refusal(ofKey key: String, as name: String) -> String? {
    if key.isEmpty { return "an empty \(name) (1 to \(maxKeySize) bytes)" }
    if key.utf8.contains(0) { return "the \(name) contains a NUL byte" }
    if key.utf8.count > maxKeySize { return "a \(name) of \(key.utf8.count) bytes, limit \(maxKeySize)" }
    if !isNormalized(key) { return "the \(name) \"\(key)\" is not in Unicode Normalization Form C (NFC)" }
    return nil
  }

  /// Whether `key` (a cardID or an idempotency key) is in Unicode Normalization Form C, as the
  /// broker requires: Swift compares and hashes strings by canonical equivalence, protobuf and
  /// clients by bytes, and the two agree on NFC strings alone. Without it "é" as one code point
  /// and as "e" with a combining accent would be one card in the broker's tables, and two on
  /// its clients, where the removal of one leaves the other for good.
  static func isNormalized(_ key: String) -> Bool {
    let isASCII = key.utf8.withContiguousStorageIfAvailable { bytes in bytes.allSatisfy { $0 < 0x80 } } ?? false
    return isASCII || key.precomposedStringWithCanonicalMapping.utf8.elementsEqual(key.utf8)
  }
}
