/// A count setting that is at least 1: a smaller value, set or given to an initializer, is
/// taken as 1. For the limits read as "1 to n" (changes per publish or per update, topics per
/// subscription), where 0 or less would leave no valid request, or no progress.
@propertyWrapper
public struct AtLeastOne: Sendable {
  private var value: Int

  /// `wrappedValue`, or 1 if it is smaller.
  public init(wrappedValue: Int) {
    value = max(wrappedValue, 1)
  }

  /// The setting, at least 1.
  public var wrappedValue: Int {
    get { value }
    set { value = max(newValue, 1) }
  }
}
