import Foundation
import PushlineClient
import Synchronization

/// Shows a tracker as it changes — `pushline watch` and `pushline demo` share it. In a
/// terminal it redraws a full frame (and `p` toggles privacy, `q` quits); otherwise it writes
/// one line per change, prefixed with the time.
struct TrackerWatcher {
  var tracker: TrackerDataManager
  var title: String
  var plain: Bool
  var nowMillis: @Sendable () -> Int64
  var output: @Sendable (String) -> Void

  /// Runs until the task is cancelled (or `q` in a terminal).
  func run() async {
    await withDiscardingTaskGroup { group in
      let bulletins = BulletinLog()
      group.addTask {
        for await bulletin in tracker.bulletins() {
          bulletins.append(bulletin)
          if plain { output("\(TrackerView.clock(nowMillis())) bulletin: \(bulletin.text(privacy: tracker.modes.privacy))") }
        }
      }
      group.addTask {  // time passes: expiry, staleness, ages
        while !Task.isCancelled {
          try? await Task.sleep(for: .seconds(1))
          tracker.refresh()
        }
      }
      if plain {
        await logChanges()
      } else {
        group.addTask { await drawFrames(bulletins) }
        await readKeys()
      }
      group.cancelAll()
    }
  }

  private func logChanges() async {
    var previous = TrackerModes.empty
    var lostAtMillis: Int64?
    for await modes in tracker.modeUpdates() {
      let now = nowMillis()
      let time = TrackerView.clock(now)
      switch (modes.connection.phase, previous.connection.phase) {
      case (.live, .live): break
      case (.live, _):
        let resumed = lostAtMillis.map { " (resumed after \(TrackerView.age((now - $0) / 1000)) offline)" } ?? ""
        output("\(time) connection: live\(resumed)")
        lostAtMillis = nil
      case (.backingOff, _) where lostAtMillis == nil, (.stopped, _):
        lostAtMillis = lostAtMillis ?? modes.connection.offlineSinceMillis
        output("\(time) connection: \(TrackerView.connection(modes.connection))")
      default: break
      }
      if modes.status?.text != previous.status?.text || modes.status?.staleness != previous.status?.staleness {
        output("\(time) status: " + (modes.status.map { TrackerView.item($0, nowMillis: now) } ?? "—"))
      }
      let browse = modes.browse.map { TrackerView.item($0, nowMillis: now) }
      let before = previous.browse.map { TrackerView.item($0, nowMillis: now) }
      if browse != before {
        output("\(time) browse: " + browse.enumerated().map { "\($0.offset + 1). \($0.element)" }.joined(separator: " | "))
      }
      previous = modes
    }
  }

  private func drawFrames(_ bulletins: BulletinLog) async {
    for await modes in tracker.modeUpdates() {
      let frame = TrackerView.frame(modes, bulletins: bulletins.all, nowMillis: nowMillis(), title: title)
      output("\u{1B}[H\u{1B}[2J" + frame.joined(separator: "\n") + "\n\n  p privacy · q quit")
    }
  }

  private func readKeys() async {
    for await key in Terminal.keys() {
      switch key {
      case UInt8(ascii: "p"): tracker.setPrivacy(!tracker.modes.privacy)
      case UInt8(ascii: "q"), 3: return  // q or Ctrl-C
      default: break
      }
    }
  }
}

/// The bulletins seen so far, for the frame, which renders them with the privacy setting of
/// the moment it is drawn.
final class BulletinLog: Sendable {
  private let entries = Mutex<[TrackerBulletin]>([])
  func append(_ bulletin: TrackerBulletin) { entries.withLock { $0 = Array(($0 + [bulletin]).suffix(20)) } }
  var all: [TrackerBulletin] { entries.withLock { $0 } }
}
