extension Duration {
  /// The duration in whole milliseconds, saturating at `Int64.min` and `Int64.max` (past some
  /// 292 million years either way): the broker and the client count time in milliseconds, and
  /// a configured duration may be "forever".
  package var milliseconds: Int64 {
    let (seconds, attoseconds) = components
    let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
    let (sum, carry) = whole.addingReportingOverflow(attoseconds / 1_000_000_000_000_000)
    return overflow || carry ? (seconds < 0 ? .min : .max) : sum
  }
}
