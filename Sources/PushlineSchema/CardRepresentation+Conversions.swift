public import PushlineWire

// Moving messages between the two ways of holding their cards: encoded where a broker takes a
// message from a caller in its own process, decoded where it hands one back.

extension CardChangeMessage {
  /// The change with its card held as `Other`, made by `transform`.
  func mapCard<Other, Failure>(_ transform: (Card) throws(Failure) -> Other) throws(Failure) -> CardChangeMessage<Other> {
    var change = CardChangeMessage<Other>()
    change.cardID = cardID
    change.requiredFieldsSet = requiredFieldsSet
    change.card = try card.map { card throws(Failure) in try transform(card) }
    change.offset = offset
    change.unknownFields = unknownFields
    return change
  }
}

extension PublishRequestMessage where Card == EncodedCard {
  /// `request` with its cards encoded.
  public init(encoding request: PublishRequest) {
    self.init()
    topic = request.topic
    requiredFieldsSet = request.requiredFieldsSet
    changes = request.changes.map { $0.mapCard(EncodedCard.init) }
    idempotencyKey = request.idempotencyKey
    unknownFields = request.unknownFields
  }
}

extension TopicUpdateMessage where Card == TrackerCard {
  /// `update` with its cards decoded.
  ///
  /// - Throws: Only for a card whose bytes were never checked (see ``EncodedCard/decoded()``).
  public init(decoding update: TopicUpdateMessage<EncodedCard>) throws(WireDecodingError) {
    self.init()
    topic = update.topic
    epoch = update.epoch
    requiredFieldsSet = update.requiredFieldsSet
    snapshot = update.snapshot
    changes = try update.changes.map { change throws(WireDecodingError) in try change.mapCard { card throws(WireDecodingError) in try card.decoded() } }
    throughOffset = update.throughOffset
    serverTimeMillis = update.serverTimeMillis
    snapshotThroughOffset = update.snapshotThroughOffset
    complete = update.complete
    unknownFields = update.unknownFields
  }
}
