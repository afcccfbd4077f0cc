import PushlineWire
import Synchronization

/// Card changes of one topic, in offset order, that many `TopicUpdate`s carry alike: a
/// broker's commit, queued by every subscriber of the topic. The run is encoded once — as a
/// `TopicUpdate`'s `changes` entries, by the first update that sends any of it — and each
/// update that sends it, whole or a slice, copies those bytes: a commit to a topic of a
/// thousand subscribers is not encoded a thousand times, change by change.
public final class EncodedChangeRun: Sendable {
  /// The changes, in offset order.
  public let changes: [EncodedCardChange]
  private let encoding = Mutex<Encoding?>(nil)

  /// The run's wire form: the `changes` entries back to back, and where each ends.
  struct Encoding {
    var bytes: [UInt8]
    /// `ends[i]` is the length of the entries of changes `0...i`.
    var ends: [Int]

    /// Where the entry of change `index` starts.
    func start(of index: Int) -> Int { index == 0 ? 0 : ends[index - 1] }

    /// The bytes of the entries of the changes in `range`.
    func size(of range: Range<Int>) -> Int { range.isEmpty ? 0 : ends[range.upperBound - 1] - start(of: range.lowerBound) }
  }

  /// A run of `changes` (in offset order), encoded when first sent.
  public init(_ changes: [EncodedCardChange]) {
    self.changes = changes
  }

  /// The number of changes.
  public var count: Int { changes.count }

  /// The encoded length of the changes in `range` as `changes` entries: what sending them adds
  /// to an update.
  public func encodedSize(of range: Range<Int>) -> Int {
    encoded.size(of: range)
  }

  /// The longest slice from `start` of at most `maxCount` changes whose encoded length stays
  /// within `maxBytes` — at least one change, whatever its length: its end, and that length.
  /// For a sender that fills a message up to a budget it must not pass.
  public func slice(from start: Int, maxCount: Int, maxBytes: Int) -> (end: Int, size: Int) {
    let encoded = encoded
    let (first, last) = (encoded.start(of: start), min(changes.count, start + max(1, maxCount)))
    var end = start + 1
    while end < last, encoded.ends[end] - first <= maxBytes { end += 1 }
    return (end, encoded.ends[end - 1] - first)
  }

  /// The run's wire form, made by the first caller.
  var encoded: Encoding {
    encoding.withLock { encoding in
      if let encoding { return encoding }
      var ends: [Int] = []
      ends.reserveCapacity(changes.count)
      var length = 0
      for index in changes.indices {
        length &+= WireSize.field(changes[index])
        ends.append(length)
      }
      var bytes = [UInt8](repeating: 0, count: length)
      bytes.withUnsafeMutableBytes { buffer in
        var writer = WireWriter(buffer)
        writer.write(0x22, changes)
      }
      encoding = Encoding(bytes: bytes, ends: ends)
      return encoding!
    }
  }

  /// Writes the entries of the changes in `range` (backwards, as a ``WireWriter`` fills).
  func write(_ range: Range<Int>, to writer: inout WireWriter) {
    guard !range.isEmpty else { return }
    let encoded = encoded
    encoded.bytes.withUnsafeBytes { bytes in
      writer.writeRaw(UnsafeRawBufferPointer(rebasing: bytes[encoded.start(of: range.lowerBound)..<encoded.ends[range.upperBound - 1]]))
    }
  }
}
