import PushlineSchema
import PushlineWire

extension PublishRequest {
  /// The publishes that carry `changes` to `topic`, in order, each within a broker's limits: at
  /// most `maxChanges` changes and `maxBytes` encoded (a change too large on its own goes alone,
  /// for the broker to refuse). None for no changes.
  ///
  /// The only or first publish carries `idempotencyKey` as given, the n-th from 2 on
  /// `"<key>#<n>"`: running the same input again with the same key applies each publish once.
  /// (So a key of one's own that ends in `#<n>` may collide with a generated one.)
  ///
  /// - Throws: `CommandFailure`, before anything is sent, when the longest of those keys would
  ///   be over `maxKeySize` bytes: the broker would refuse that batch, after those before it
  ///   were applied, on every run.
  static func batches(
    of changes: [CardChange], to topic: String, idempotencyKey: String?, maxChanges: Int, maxBytes: Int,
    maxKeySize: Int
  ) throws(CommandFailure) -> [PublishRequest] {
    var batches: [PublishRequest] = []
    var batch = PublishRequest(topic: topic, changes: [], idempotencyKey: idempotencyKey)
    var size = batch.encodedSize()
    for change in changes {
      // The field's one-byte tag, its length and the change.
      let changeSize = 1 + WireSize.lengthDelimited(change)
      if !batch.changes.isEmpty, batch.changes.count == maxChanges || size + changeSize > maxBytes {
        batches.append(batch)
        batch = PublishRequest(topic: topic, changes: [], idempotencyKey: idempotencyKey.map { "\($0)#\(batches.count + 1)" })
        size = batch.encodedSize()
      }
      batch.changes.append(change)
      size += changeSize
    }
    if !batch.changes.isEmpty { batches.append(batch) }
    // The last batch's key is the longest: "#<n>" only grows with n.
    if let key = idempotencyKey, let longest = batches.last?.idempotencyKey, longest.utf8.count > maxKeySize {
      let count = batches.count
      let limit = "over the broker's limit of \(maxKeySize)"
      guard count > 1 else {
        throw CommandFailure("--idempotency-key of \(key.utf8.count) bytes is \(limit); nothing was published")
      }
      throw CommandFailure(
        "--idempotency-key of \(key.utf8.count) bytes is too long for the \(count) batches this input needs: "
          + "the longest key they need, K#\(count), would be \(longest.utf8.count) bytes, \(limit); nothing was "
          + "published (use a key of at most \(maxKeySize - "#\(count)".utf8.count) bytes)")
    }
    return batches
  }
}
