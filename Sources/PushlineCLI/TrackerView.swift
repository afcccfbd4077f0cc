import Foundation
import PushlineClient

/// Renders the tracker's modes as text: a full frame for a terminal, and one line per change
/// for logs and pipes. Pure functions of their inputs, so tests read exactly what users see.
enum TrackerView {
  /// `HH:mm:ss` of a Unix-milliseconds time, in the local time zone.
  static func clock(_ millis: Int64) -> String {
    let formatter = DateFormatter()
    formatter.dateFormat = "HH:mm:ss"
    return formatter.string(from: Date(timeIntervalSince1970: Double(millis) / 1000))
  }

  /// "12 s", "3 min", "2 h".
  static func age(_ seconds: Int64) -> String {
    switch seconds {
    case ..<60: "\(max(0, seconds)) s"
    case ..<3600: "\(seconds / 60) min"
    default: "\(seconds / 3600) h"
    }
  }

  /// The connection line: "live", "connecting (attempt 2)", "offline since 12:00:05 · retrying at …".
  static func connection(_ state: ConnectionState) -> String {
    let offline = state.offlineSinceMillis.map { " · offline since \(clock($0))" } ?? ""
    switch state.phase {
    case .idle: return "starting"
    case .connecting(let attempt): return "connecting (attempt \(attempt))\(offline)"
    case .live: return "live"
    case .backingOff(let until, let reason): return "retrying at \(clock(until))\(offline) · \(reason)"
    case .stopped(let reason): return "stopped: \(reason)"
    }
  }

  /// One card: its text, and when it may be out of date, its age and why —
  /// "Today · ••••  (updated 3 min ago · offline)". The update time is the publisher's word,
  /// passed on unchecked: one so far off that the age does not fit in `Int64` reads "updated ? ago".
  static func item(_ item: TrackerItem, nowMillis: Int64) -> String {
    guard let staleness = item.staleness else { return item.text }
    let (seconds, overflow) = (nowMillis / 1000).subtractingReportingOverflow(item.lastUpdatedAt)
    let updated = "updated \(overflow ? "?" : age(seconds)) ago"
    switch staleness {
    case .offline: return "\(item.text)  (\(updated) · offline)"
    case .serviceOutage(let message): return "\(item.text)  (\(updated) · \(message ?? "service outage"))"
    }
  }

  /// What the broker vouches for of `items`, for the title line: " · verified at 12:00:05",
  /// the oldest of their topics' verified times, since the label speaks for every card shown;
  /// " · not verified yet" while any of them is of a topic never verified (cards from before
  /// the broker's first complete update or snapshot, or a snapshot still arriving in parts),
  /// which the oldest time would otherwise pass over; nothing when no card is shown.
  static func verification(_ items: [TrackerItem]) -> String {
    let times = items.map(\.verifiedAtMillis)
    if times.contains(nil) { return " · not verified yet" }
    return times.compactMap { $0 }.min().map { " · verified at \(clock($0))" } ?? ""
  }

  /// The whole screen. Bulletins are rendered here, with the privacy setting of `modes`: one
  /// that arrived before privacy mode was turned on shows no amount either.
  static func frame(_ modes: TrackerModes, bulletins: [TrackerBulletin], nowMillis: Int64, title: String) -> [String] {
    let verified = verification(modes.browse)
    var lines = ["\(title) — \(connection(modes.connection))\(verified)\(modes.privacy ? " · privacy on" : "")", ""]
    lines.append("STATUS   " + (modes.status.map { item($0, nowMillis: nowMillis) } ?? "—"))
    lines.append("")
    lines.append("BROWSE")
    if modes.browse.isEmpty { lines.append("  (no cards)") }
    for (rank, entry) in modes.browse.enumerated() { lines.append("  \(rank + 1). \(item(entry, nowMillis: nowMillis))") }
    lines.append("")
    lines.append("BULLETINS")
    if bulletins.isEmpty { lines.append("  (none yet)") }
    for bulletin in bulletins.suffix(5).reversed() { lines.append("  \(bulletin.text(privacy: modes.privacy))") }
    return lines
  }
}
