extension Dictionary {
  /// Changes the value stored for `key` in place, if there is one, and returns what `change`
  /// returns (`nil` when there is no value).
  ///
  /// What `dictionary[key]?.field = x` does, without the subscript's `_modify` accessor: its
  /// coroutine frame does not fit the caller's buffer and is allocated on the heap, a cost on
  /// every call of the hot paths that change a table of calls or topics per frame or publish.
  /// The value is changed where it is stored, through its position (the key is hashed once),
  /// so a copy-on-write buffer it holds (a topic's card table, a call's responses) is changed
  /// without being copied.
  @inlinable
  @discardableResult
  package mutating func changeValue<Result, Failure: Error>(
    forKey key: Key, _ change: (inout Value) throws(Failure) -> Result
  ) throws(Failure) -> Result? {
    guard let position = index(forKey: key) else { return nil }
    return try change(&values[position])
  }

  /// Changes the value stored for `key` in place, starting from `defaultValue()` when there is
  /// none, and returns what `change` returns (see ``changeValue(forKey:_:)``).
  @inlinable
  @discardableResult
  package mutating func changeValue<Result, Failure: Error>(
    forKey key: Key, default defaultValue: @autoclosure () -> Value, _ change: (inout Value) throws(Failure) -> Result
  ) throws(Failure) -> Result {
    if let position = index(forKey: key) { return try change(&values[position]) }
    var value = defaultValue()
    defer { self[key] = value }
    return try change(&value)
  }
}
