/// Where the card cache survives restarts. The cache hands it whole topics that changed, and
/// a save must be atomic: a position is never stored ahead of the cards it covers.
public protocol CachePersistence: Sendable {
  /// Every stored topic.
  func load() throws -> [TopicCache]
  /// Replaces the stored copies of `topics` with these, atomically.
  func save(_ topics: [TopicCache]) throws
  /// The broker's clock minus the client's, as last stored: a client restarted during an
  /// outage enforces `expiresAt` by the broker's clock before it can ask the broker again.
  func loadClockSkew() throws -> Int64?
  /// Stores the broker's clock minus the client's.
  func saveClockSkew(_ skewMillis: Int64) throws
}

extension CachePersistence {
  /// None stored: a persistence that keeps no clock skew starts uncorrected.
  public func loadClockSkew() throws -> Int64? { nil }
  /// Kept nowhere.
  public func saveClockSkew(_ skewMillis: Int64) throws {}
}
