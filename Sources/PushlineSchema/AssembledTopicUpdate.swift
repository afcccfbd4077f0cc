public import PushlineWire

/// A `TopicUpdate` (``EncodedTopicUpdate``) whose changes are assembled from pieces: single
/// changes, and slices of runs that other updates carry too (``EncodedChangeRun``), which it
/// sends by copying their encoding. What a broker sends a subscriber; its wire form is an
/// `EncodedTopicUpdate`'s with the same changes, byte for byte.
public struct AssembledTopicUpdate: WireMessage {
  public static var protoName: String { EncodedTopicUpdate.protoName }

  /// Part of an update's changes.
  public enum Piece: Sendable {
    /// One change.
    case change(EncodedCardChange)
    /// The changes of `run` in the range.
    case run(EncodedChangeRun, Range<Int>)
  }

  /// The update's fields, and the first of its changes.
  public var base: EncodedTopicUpdate
  /// The rest of its changes, after `base.changes`, in order.
  public var pieces: [Piece] = []

  /// An update with no fields set.
  public init() {
    base = EncodedTopicUpdate()
  }

  /// `update`, to which pieces may be added.
  public init(_ update: EncodedTopicUpdate) {
    base = update
  }

  public var unknownFields: UnknownFields {
    get { base.unknownFields }
    set { base.unknownFields = newValue }
  }

  /// The update with its changes in one array: what a reader of this update gets.
  public var topicUpdate: EncodedTopicUpdate {
    var update = base
    for piece in pieces {
      switch piece {
      case .change(let change): update.changes.append(change)
      case .run(let run, let range): update.changes += run.changes[range]
      }
    }
    return update
  }

  /// How many changes the update carries.
  public var changeCount: Int {
    pieces.reduce(base.changes.count) { count, piece in
      switch piece {
      case .change: count + 1
      case .run(_, let range): count + range.count
      }
    }
  }

  /// The offset of its last change, if it has changes.
  public var lastOffset: Int64? {
    switch pieces.last {
    case .change(let change): change.offset
    case .run(let run, let range): run.changes[range.upperBound - 1].offset
    case nil: base.changes.last?.offset
    }
  }

  public func encodedSize() -> Int {
    pieces.reduce(base.encodedSize()) { size, piece in
      switch piece {
      case .change(let change): size &+ WireSize.field(change)
      case .run(let run, let range): size &+ run.encodedSize(of: range)
      }
    }
  }

  public func encode(to writer: inout WireWriter) {
    base.encode(to: &writer) { writer in
      var index = pieces.endIndex
      while index > pieces.startIndex {
        index -= 1
        switch pieces[index] {
        case .change(let change): writer.write(0x22, change)
        case .run(let run, let range): run.write(range, to: &writer)
        }
      }
      writer.write(0x22, base.changes)
    }
  }

  /// Merges the fields read into the update; changes read follow those it has.
  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    if !pieces.isEmpty {
      base = topicUpdate
      pieces = []
    }
    try base.decodeFields(from: &reader)
  }

  public var missingRequiredField: String? { topicUpdate.missingRequiredField }

  public static func == (lhs: Self, rhs: Self) -> Bool { lhs.topicUpdate == rhs.topicUpdate }

  public func hash(into hasher: inout Hasher) { hasher.combine(topicUpdate) }
}
