/// Where the card cache survives restarts. The cache hands it whole topics that changed, and
/// a save must be atomic: a position is never stored ahead of the cards it covers.
public protocol CachePersistence: Sendable {
  /// Every stored topic.
  func load() throws -> [TopicCache]
  /// Replaces the stored copies of `topics` with these, atomically.
  func save(_ topics: [TopicCache]) throws
}
