/// Where the card cache survives restarts. The cache hands it whole topics that changed, with
/// the clock skew when that changed too, and a save must be atomic: a position is never stored
/// ahead of the cards it covers, nor a skew without the cards written with it.
///
/// The cache calls ``save(_:clockSkewMillis:)`` from one flush at a time, at most once per
/// flush, and only when something changed.
public protocol CachePersistence: Sendable {
  /// Every stored topic.
  func load() throws -> [TopicCache]
  /// The broker's clock minus the client's, as last stored: a client restarted during an
  /// outage enforces `expiresAt` by the broker's clock before it can ask the broker again.
  func loadClockSkew() throws -> Int64?
  /// Replaces the stored copies of `topics` with these and, unless `clockSkewMillis` is
  /// `nil`, the stored clock skew with it: in one atomic write, all of it or none.
  ///
  /// - Throws: when nothing was stored; the cache then keeps all of it for its next flush.
  func save(_ topics: [TopicCache], clockSkewMillis: Int64?) throws
}

extension CachePersistence {
  /// None stored: a persistence that keeps no clock skew starts uncorrected.
  public func loadClockSkew() throws -> Int64? { nil }
}
