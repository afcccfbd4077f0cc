@testable import PushlineCLI
import Synchronization
import Testing

@Suite("pushline demo")
struct DemoTests {
  /// What the demo shows within a cycle of its network cuts (3.5 s live, 2.5 s down): both
  /// services' cards, a bulletin, the stale label of an outage and the resume after it.
  static let markers = ["Today ·", "Quest 1 ·", "bulletin: Trip", "ago · offline)", "connection: live (resumed"]

  /// The demo runs until it has shown every marker — about ten seconds on a quiet machine,
  /// longer on a busy one, where a fixed duration would end it too soon — and then stops.
  @Test(.timeLimit(.minutes(2))) func theDemoShowsBothServicesABulletinAnOutageAndAResume() async throws {
    let lines = Mutex<[String]>([])
    let (allShown, shown) = AsyncStream<Void>.makeStream()
    try await DemoCommand.run(dataDirectory: nil, plain: true) { line in
      let text = lines.withLock { lines in
        lines.append(line)
        return lines.joined(separator: "\n")
      }
      if Self.markers.allSatisfy(text.contains) { shown.finish() }
    } until: {
      for await _ in allShown {}  // or the time limit's cancellation: the expectations then say what is missing
    }
    let output = lines.withLock { $0.joined(separator: "\n") }
    for marker in Self.markers { #expect(output.contains(marker), "\(marker):\n\(output)") }
    #expect(output.hasSuffix("pushline demo: stopped"))
  }
}
