extension Duration {
  /// A retry-after hint drawn at random from zero to this duration (a reconnect spread), in
  /// milliseconds, saturating at `UInt32.max` (some 49 days); 0 for a duration of zero or less.
  ///
  /// What a server going away tells each of its clients — the broker each subscription, the
  /// RPC server each connection's GOAWAY — so that clients told in the same instant do not all
  /// come back in the same instant.
  package func randomRetryAfterMillis() -> UInt32 {
    UInt32(clamping: Int64.random(in: 0...max(milliseconds, 0)))
  }
}
