public import PushlineWire

/// The data a card renders (`pushline.tracker.TrackerCardPayload`): one section per card kind;
/// exactly one is expected, and new card kinds add sections.
public struct TrackerCardPayload: ReflectableMessage {
  public static let protoName = "pushline.tracker.TrackerCardPayload"

  /// The last trip.
  public var trackerRecentTripsCard: TrackerRecentTripsCard?
  /// Today's summary.
  public var trackerDailyEarningsCard: TrackerDailyEarningsCard?
  /// This week's summary.
  public var trackerWeeklyEarningsCard: TrackerWeeklyEarningsCard?
  /// A quest in progress.
  public var trackerDxGyProgressCard: TrackerDxGyProgressCard?
  /// A quest completed.
  public var trackerDxGyCompletionCard: TrackerDxGyCompletionCard?
  public var unknownFields = UnknownFields()

  public init() {}

  public func encodedSize() -> Int {
    WireSize.field(trackerRecentTripsCard) &+ WireSize.field(trackerDailyEarningsCard)
      &+ WireSize.field(trackerWeeklyEarningsCard) &+ WireSize.field(trackerDxGyProgressCard)
      &+ WireSize.field(trackerDxGyCompletionCard) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    writer.write(0x0A, trackerRecentTripsCard)
    writer.write(0x12, trackerDailyEarningsCard)
    writer.write(0x1A, trackerWeeklyEarningsCard)
    writer.write(0x22, trackerDxGyProgressCard)
    writer.write(0x2A, trackerDxGyCompletionCard)
    unknownFields.write(to: &writer)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x0A: try reader.readMessage(into: &trackerRecentTripsCard)
      case 0x12: try reader.readMessage(into: &trackerDailyEarningsCard)
      case 0x1A: try reader.readMessage(into: &trackerWeeklyEarningsCard)
      case 0x22: try reader.readMessage(into: &trackerDxGyProgressCard)
      case 0x2A: try reader.readMessage(into: &trackerDxGyCompletionCard)
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if let path = trackerRecentTripsCard?.missingRequiredField { return "trackerRecentTripsCard.\(path)" }
    if let path = trackerDailyEarningsCard?.missingRequiredField { return "trackerDailyEarningsCard.\(path)" }
    if let path = trackerWeeklyEarningsCard?.missingRequiredField { return "trackerWeeklyEarningsCard.\(path)" }
    if let path = trackerDxGyProgressCard?.missingRequiredField { return "trackerDxGyProgressCard.\(path)" }
    if let path = trackerDxGyCompletionCard?.missingRequiredField { return "trackerDxGyCompletionCard.\(path)" }
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
