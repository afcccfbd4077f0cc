import PushlineSchema
import PushlineWire

extension PublishRequest {
  /// The publishes that carry `changes` to `topic`, in order, each within a broker's limits: at
  /// most `maxChanges` changes and `maxBytes` encoded (a change too large on its own goes alone,
  /// for the broker to refuse). None for no changes.
  ///
  /// The only or first publish carries `idempotencyKey` as given, the n-th from 2 on
  /// `"<key>#<n>"`: running the same input again with the same key applies each publish once.
  static func batches(
    of changes: [CardChange], to topic: String, idempotencyKey: String?, maxChanges: Int, maxBytes: Int
  ) -> [PublishRequest] {
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
    return batch.changes.isEmpty ? batches : batches + [batch]
  }
}
