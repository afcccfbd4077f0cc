/// The most a command's duration in seconds may be — `--timeout`, `--ttl`, `--stale-after`,
/// and the `serve` settings counted in seconds: a year. Anything longer is a typo, and far
/// longer would overflow the milliseconds the libraries count time in.
enum SecondsLimit {
  /// A year, in seconds.
  static let maximum = 365 * 86_400
  /// How messages name the limit: "31536000 seconds (a year)".
  static let description = "\(maximum) seconds (a year)"
}
