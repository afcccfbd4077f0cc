@testable import PushlineCLI
import Synchronization
import Testing

@Suite("pushline demo")
struct DemoTests {
  @Test func tenSecondsShowBothServicesABulletinAnOutageAndAResume() async throws {
    let lines = Mutex<[String]>([])
    try await DemoCommand.run(duration: .seconds(10), dataDirectory: nil, plain: true) { line in lines.withLock { $0.append(line) } }
    let output = lines.withLock { $0.joined(separator: "\n") }
    #expect(output.contains("Today ·"), "earnings cards:\n\(output)")
    #expect(output.contains("Quest 1 ·"), "incentives cards:\n\(output)")
    #expect(output.contains("bulletin: Trip"), "a bulletin:\n\(output)")
    #expect(output.contains("ago · offline)"), "a stale label:\n\(output)")
    #expect(output.contains("connection: live (resumed"), "a resume:\n\(output)")
    #expect(output.hasSuffix("pushline demo: stopped"))
  }
}
