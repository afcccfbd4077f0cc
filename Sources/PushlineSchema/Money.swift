public import PushlineWire

/// An amount in the currency's minor unit (`pushline.tracker.Money`), signed because
/// adjustments can be negative.
public struct Money: ReflectableMessage {
  public static let protoName = "pushline.tracker.Money"

  /// ISO 4217 code, for example `USD`. Required.
  public var currencyCode: String = "" { didSet { requiredFieldsSet |= 0b01 } }
  /// The amount in minor units (cents for USD). Required.
  public var minorUnits: Int64 = 0 { didSet { requiredFieldsSet |= 0b10 } }
  public var unknownFields = UnknownFields()

  var requiredFieldsSet: UInt8 = 0

  public init() {}

  /// A value with its required fields set.
  public init(currencyCode: String, minorUnits: Int64) {
    self.currencyCode = currencyCode
    self.minorUnits = minorUnits
    requiredFieldsSet = 0b11
  }

  public func encodedSize() -> Int {
    WireSize.field(currencyCode) &+ WireSize.zigZagField(minorUnits) &+ unknownFields.encodedSize
  }

  public func encode(to writer: inout WireWriter) {
    unknownFields.write(to: &writer)
    writer.writeZigZag(0x10, minorUnits)
    writer.write(0x0A, currencyCode)
  }

  public mutating func decodeFields(from reader: inout WireReader) throws(WireDecodingError) {
    while !reader.isAtEnd {
      let tagStart = reader.offset
      switch try reader.readTag() {
      case 0x0A: currencyCode = try reader.readString()
      case 0x10: minorUnits = try reader.readSInt64()
      case let tag: try reader.skipField(tag: tag, startingAt: tagStart, into: &unknownFields)
      }
    }
  }

  public var missingRequiredField: String? {
    if requiredFieldsSet & 0b01 == 0 { return "currencyCode" }
    if requiredFieldsSet & 0b10 == 0 { return "minorUnits" }
    return nil
  }

  public static let fields: [FieldDescriptor<Self>] = [
    .required(1, "currencyCode", \.currencyCode),
    .required(2, "minorUnits", \.minorUnits, as: .sint64),
  ]
}
