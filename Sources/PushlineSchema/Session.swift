public import PushlineWire

/// The result of onboarding (`pushline.onboarding.Session`).
public struct Session: ReflectableMessage {
  public static let protoName = "pushline.onboarding.Session"

  /// The session. Required.
  public var sessionID: String = "" { didSet { requiredFieldsSet |= 0b01 } }
  /// The onboarded user. Required.
  public var userID: String = "" { didSet { requiredFieldsSet |= 0b10 } }
  /// A token for the app to use.
  public var accessToken: String?
  /// When the session expires, seconds since the epoch.
  public var expiresAt: Int64?
  /// How the user got here.
  public var scenario: Scenario?
  public var unknownFields = UnknownFields()

  var requiredFieldsSet: UInt8 = 0

  public init() {}

  /// A value with its required fields set.
  public init(sessionID: String, userID: String) {
    self.sessionID = sessionID
    self.userID = userID
    requiredFieldsSet = 0b11
  }

  public func encodedSize() -> Int {
    WireSize.field(sessionID) &+ WireSize.field(userID) &+ WireSize.field(accessToken)
      &+ WireSize.field(expiresAt) &+ WireSize.field(scenario) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.write(0x28, scenario)
    writer.write(0x20, expiresAt)
    writer.write(0x1A, accessToken)
    writer.write(0x12, userID)
    writer.write(0x0A, sessionID)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x0A: sessionID = try reader.readString()
      case 0x12: userID = try reader.readString()
      case 0x1A: accessToken = try reader.readString()
      case 0x20: expiresAt = try reader.readInt64()
      case 0x28:
        if let value = try reader.readEnum(Scenario.self, fieldNumber: 5, unknownFields: &unknownFields) {
          scenario = value
        }
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b01 == 0 { return "sessionID" }
    if requiredFieldsSet & 0b10 == 0 { return "userID" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .required(1, "sessionID", \.sessionID),
    .required(2, "userID", \.userID),
    .optional(3, "accessToken", \.accessToken),
    .optional(4, "expiresAt", \.expiresAt),
    .optional(5, "scenario", \.scenario),
  ]
}
