public import PushlineSchema

extension Array where Element == MetadataEntry {
  /// The metadata's size as HTTP/2 counts a header list (RFC 9113, section 6.5.2): each
  /// entry's key and value in bytes, plus 32 for the entry itself. A connection or a call keeps
  /// its metadata while it lives, and an entry costs the server far more than the few bytes an
  /// empty one takes on the wire; counted this way, a limit bounds what is kept.
  public var accountedSize: Int {
    reduce(0) { size, entry in size + entry.key.utf8.count + (entry.value?.utf8.count ?? 0) + 32 }
  }
}
