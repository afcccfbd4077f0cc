/// A server's address as users write it: `HOST:PORT`, or `[IPv6]:PORT`.
struct ServerAddress: Hashable, Sendable, CustomStringConvertible {
  var host: String
  var port: Int

  /// Parses `text`; `nil` when it is not `HOST:PORT` with a port in 1…65535.
  init?(_ text: String) {
    guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
      (1...65_535).contains(port), colon != text.startIndex
    else { return nil }
    var host = text[..<colon]
    if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }  // [::1]:7400
    self.host = String(host)
    self.port = port
  }

  var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
