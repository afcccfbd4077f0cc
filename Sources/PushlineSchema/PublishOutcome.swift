public import PushlineWire

/// One answer on a publish stream (`pushline.broker.PublishOutcome`): where the publish
/// landed, or the status that refused it. A refusal is an answer, not the stream's end, so
/// one bad publish does not cost the publishes in flight behind it.
public struct PublishOutcome: ReflectableMessage {
  public static let protoName = "pushline.broker.PublishOutcome"

  /// Where the publish landed, once durable; `nil` when it was refused.
  public var response: PublishResponse?
  /// Why the publish was refused — the status a `Publish` call would have ended with;
  /// `nil` when it was applied.
  public var status: CallStatus?
  public var unknownFields = UnknownFields()

  public init() {}

  /// The outcome of a publish that landed as `response` says.
  public init(_ response: PublishResponse) {
    self.response = response
  }

  /// The outcome of a publish refused with `status`.
  public init(refusedWith status: CallStatus) {
    self.status = status
  }

  public func encodedSize() -> Int {
    WireSize.field(response) &+ WireSize.field(status) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x12, status)
    writer.write(0x0A, response)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x0A: try reader.readMessage(into: &response)
      case 0x12: try reader.readMessage(into: &status)
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if let path = response?.missingRequiredField { return "response.\(path)" }
    if let path = status?.missingRequiredField { return "status.\(path)" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .optional(1, "response", \.response),
    .optional(2, "status", \.status),
  ]
}
