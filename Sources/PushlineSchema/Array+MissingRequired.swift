public import PushlineWire

extension Array where Element: WireMessage {
  /// The path, `[index].field`, of the first element with a missing required field.
  @inlinable
  public var firstMissingRequiredField: String? {
    for (index, element) in enumerated() {
      if let path = element.missingRequiredField { return "[\(index)].\(path)" }
    }
    return nil
  }
}
