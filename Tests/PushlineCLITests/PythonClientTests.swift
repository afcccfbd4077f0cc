import Dispatch
import Foundation
import NIOCore
import PushlineBroker
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import PushlineWire
import Synchronization
import Testing

@testable import PushlineCLI

#if canImport(Glibc)
  import Glibc
#endif

/// `tools/pyclient/pushline_client.py` — a client written in Python from docs/PROTOCOL.md alone —
/// against a real broker in this process: the document suffices to interoperate.
@Suite("The independent Python client")
struct PythonClientTests {
  static let secret = Array("0123456789abcdef0123456789abcdef".utf8)

  @Test func healthSaysServing() async throws {
    try await withBroker { port, _ in
      let run = try await PythonClient.run(["health", "127.0.0.1:\(port)"])
      #expect(run.status == 0, "\(run.errorText)")
      #expect(run.lines == ["SERVING"])
    }
  }

  @Test func aPublishThroughPythonIsAcknowledgedWithOffsets() async throws {
    try await withBroker { port, running in
      let token = try await Self.token(running, .publisher)
      let a = Self.card("a", priority: 1), b = Self.card("b", priority: 2), c = Self.card("c", priority: 3)
      let first = try await PythonClient.run(
        ["publish", "127.0.0.1:\(port)", "--token", token, "--topic", "driver/7", "--card-json", try Self.json(a),
         "--card-json", try Self.json(b)])
      #expect(first.status == 0, "\(first.errorText)")
      let response = try PythonClient.object(try #require(first.lines.first))
      #expect(response["firstOffset"] as? String == "1" && response["lastOffset"] as? String == "2", "\(response)")
      let epoch = try #require(response["epoch"] as? String)

      // Cards on stdin, one JSON document per line.
      let second = try await PythonClient.run(
        ["publish", "127.0.0.1:\(port)", "--token", token, "--topic", "driver/7"], input: try Self.json(c, oneLine: true) + "\n")
      #expect(second.status == 0, "\(second.errorText)")
      let again = try PythonClient.object(try #require(second.lines.first))
      #expect(again["epoch"] as? String == epoch && again["firstOffset"] as? String == "3" && again["lastOffset"] as? String == "3")

      // The broker holds exactly what Python sent.
      let snapshot = try await Self.getCards(port: port, running: running, topic: "driver/7")
      #expect(snapshot.changes.compactMap(\.card) == [a, b, c])
      #expect(String(snapshot.epoch) == epoch && snapshot.throughOffset == 3)
    }
  }

  /// The Python client, written from PROTOCOL.md alone, publishes each card on its own on one
  /// PublishStream (a pipelined call, 2.6): an outcome for each, in order, then STATUS OK.
  @Test func aPythonPublishStreamGetsAnOutcomePerPublishInOrder() async throws {
    try await withBroker { port, running in
      let token = try await Self.token(running, .publisher)
      let cards = [Self.card("a", priority: 1), Self.card("b", priority: 2), Self.card("c", priority: 3)]
      let cardArguments = try cards.flatMap { ["--card-json", try Self.json($0)] }
      let run = try await PythonClient.run(
        ["publish", "127.0.0.1:\(port)", "--token", token, "--topic", "driver/9", "--stream", "--remove", "gone"] + cardArguments)
      #expect(run.status == 0, "\(run.errorText)")
      let outcomes = try run.lines.map { try PythonClient.object($0)["response"] as? [String: Any] ?? [:] }
      #expect(outcomes.map { $0["firstOffset"] as? String } == ["1", "2", "3", "4"], "\(run.lines)")
      let snapshot = try await Self.getCards(port: port, running: running, topic: "driver/9")
      #expect(snapshot.changes.compactMap(\.card) == cards && snapshot.throughOffset == 4)
    }
  }

  @Test func aPythonSubscriberGetsTheSnapshotThenLiveUpdatesAndEndsWithThePublishedCards() async throws {
    try await withBroker { port, running in
      let reader = try await Self.token(running, .subscriber)
      var truth: [String: TrackerCard] = [:]
      try await Self.withPublisher(port: port, running: running) { connection in
        func publish(_ changes: [CardChange]) async throws {
          _ = try await connection.unary(
            BrokerService.publishMethod, request: PublishRequest(topic: "driver/9", changes: changes), response: PublishResponse.self)
          for change in changes { truth[change.cardID] = change.card }
        }
        try await publish([CardChange(upserting: Self.card("a", priority: 1)), CardChange(upserting: Self.card("b", priority: 2))])

        let subscriber = try PythonClient.start(
          ["subscribe", "127.0.0.1:\(port)", "--token", reader, "--topic", "driver/9", "--count", "4"])
        var lines = subscriber.lines.makeAsyncIterator()
        // The snapshot: the call is live once it has arrived.
        let snapshot = try PythonClient.object(try #require(await lines.next(), "\(subscriber.errorText())"))
        #expect(snapshot["snapshot"] as? Bool == true && snapshot["throughOffset"] as? String == "2")
        #expect(Self.changes(snapshot).map(\.id) == ["a", "b"])

        // Live updates, each awaited before the next publish.
        let live: [(changes: [CardChange], expected: [(id: String, offset: String, removal: Bool)])] = [
          ([CardChange(upserting: Self.card("c", priority: 3))], [("c", "3", false)]),
          ([CardChange(removing: "a")], [("a", "4", true)]),
          ([CardChange(upserting: Self.card("b", priority: 20, title: "b, second version"))], [("b", "5", false)]),
        ]
        for (changes, expected) in live {
          try await publish(changes)
          let update = try PythonClient.object(try #require(await lines.next(), "\(subscriber.errorText())"))
          #expect(update["snapshot"] == nil && update["topic"] as? String == "driver/9")
          let got = Self.changes(update)
          #expect(got.map(\.id) == expected.map(\.id) && got.map(\.offset) == expected.map(\.offset))
          #expect(got.map(\.removal) == expected.map(\.removal))
          #expect(update["throughOffset"] as? String == expected.last?.offset)
        }

        // --count 4 reached: the client cancels, prints its copy and exits by itself.
        let final = try PythonClient.object(try #require(await lines.next()))
        let copy = try #require(final["final"] as? [String: Any])
        #expect(copy["position"] as? String == "5")
        let cards = try PythonClient.cards(copy["cards"])
        #expect(cards == truth.keys.sorted().compactMap { truth[$0] })
        #expect(await lines.next() == nil)
        let status = await subscriber.exitStatus()
        #expect(status == 0, "\(subscriber.errorText())")
      }
    }
  }

  @Test func aLargeCardRoundTripsDeflated() async throws {
    try await withBroker { port, running in
      let writer = try await Self.token(running, .publisher), reader = try await Self.token(running, .subscriber)
      let title = (0..<400).map { "trip \($0) " }.joined()  // > 2 KiB
      #expect(title.utf8.count > 2048)
      let big = Self.card("big", priority: 1, title: title)

      let published = try await PythonClient.run(
        ["-v", "publish", "127.0.0.1:\(port)", "--token", writer, "--topic", "driver/big", "--card-json", try Self.json(big)])
      #expect(published.status == 0, "\(published.errorText)")
      #expect(published.errorText.contains("negotiated compression=DEFLATE"))
      #expect(published.errorText.contains("compressed message sent"), "the request was not deflated: \(published.errorText)")
      #expect(try await Self.getCards(port: port, running: running, topic: "driver/big").changes.compactMap(\.card) == [big])

      let subscribed = try await PythonClient.run(
        ["-v", "subscribe", "127.0.0.1:\(port)", "--token", reader, "--topic", "driver/big", "--count", "1"])
      #expect(subscribed.status == 0, "\(subscribed.errorText)")
      #expect(subscribed.errorText.contains("compressed message received"), "the snapshot was not deflated: \(subscribed.errorText)")
      let last = try PythonClient.object(try #require(subscribed.lines.last))
      let final = try #require(last["final"] as? [String: Any])
      #expect(try PythonClient.cards(final["cards"]) == [big])
    }
  }

  /// 1,200 cards of 1,000 letters, about 1.3 MB without compression: Python's publish and the
  /// broker's answer to get-cards each cross in two MESSAGE frames of the default 1 MiB.
  @Test func messagesLargerThanAFrameCrossInSeveral() async throws {
    try await withBroker { port, running in
      let writer = try await Self.token(running, .publisher), reader = try await Self.token(running, .subscriber)
      let letters = Array("abcdefghijklmnopqrstuvwxyz ".utf8)
      let cards = (0..<1_200).map { index in
        Self.card("c\(index)", priority: Double(index), title: String(decoding: (0..<1_000).map { _ in letters.randomElement()! }, as: UTF8.self))
      }
      let input = try cards.map { try Self.json($0, oneLine: true) + "\n" }.joined()
      let published = try await PythonClient.run(
        ["-v", "--identity", "publish", "127.0.0.1:\(port)", "--token", writer, "--topic", "driver/many"], input: input)
      #expect(published.status == 0, "\(published.errorText.suffix(2_000))")
      #expect(published.errorText.contains("-> MESSAGE call 1 1048576 bytes CONTINUES"), "\(published.errorText.suffix(2_000))")

      let pulled = try await PythonClient.run(["-v", "--identity", "get-cards", "127.0.0.1:\(port)", "--token", reader, "--topic", "driver/many"])
      #expect(pulled.status == 0, "\(pulled.errorText.suffix(2_000))")
      #expect(pulled.errorText.contains("<- MESSAGE call 1 1048576 bytes CONTINUES"), "\(pulled.errorText.suffix(2_000))")
      let snapshot = try PythonClient.object(try #require(pulled.lines.first))
      let received = try PythonClient.cards((snapshot["changes"] as? [[String: Any]])?.map { $0["card"] as Any })
      #expect(received.sorted { $0.cardID < $1.cardID } == cards.sorted { $0.cardID < $1.cardID })
    }
  }

  /// `TopicCopy` follows 3.3 through a snapshot in parts: the cards it held that the first
  /// part leaves out stay until its position reaches `snapshotThroughOffset` at a complete
  /// update (not merely reaches it), unless a later part brings them again; then the rest go.
  @Test func aPythonCopyKeepsItsCardsWhileASnapshotArrivesInParts() async throws {
    try await PythonClient.requireTools()
    let code = """
      import sys
      sys.path.insert(0, sys.argv[1])
      from pushline_client import Messages, TopicCopy
      m = Messages()
      def update(epoch, through, cards, snapshot=False, snapshot_through=None, complete=False):
          u = m.TopicUpdate(topic="t", epoch=epoch, throughOffset=through, snapshot=snapshot, complete=complete)
          if snapshot_through is not None:
              u.snapshotThroughOffset = snapshot_through
          for card_id, offset in cards:
              u.changes.add(cardID=card_id, offset=offset).card.cardID = card_id
          return u
      copy = TopicCopy("t")
      copy.apply(update(1, 3, [("a", 1), ("b", 2), ("c", 3)], snapshot=True))
      copy.apply(update(2, 5, [("b", 5)], snapshot=True, snapshot_through=8))
      print(sorted(copy.cards))
      copy.apply(update(2, 7, [("c", 7)]))
      print(sorted(copy.cards))
      copy.apply(update(2, 8, [("d", 8)]))
      print(sorted(copy.cards), copy.position)
      copy.apply(update(2, 9, [("c", 9)], complete=True))
      print(sorted(copy.cards), copy.position)
      """
    let result = try await PythonClient.run(["-c", code, PythonClient.script.deletingLastPathComponent().path], program: [])
    #expect(result.status == 0 && result.lines == ["['a', 'b', 'c']", "['a', 'b', 'c']", "['a', 'b', 'c', 'd'] 8", "['b', 'c', 'd'] 9"], "\(result.errorText)")
  }

  @Test func aBadTokenGivesUnauthenticated() async throws {
    try await withBroker { port, _ in
      let garbage = try await PythonClient.run(
        ["publish", "127.0.0.1:\(port)", "--token", "not-a-token", "--topic", "driver/1", "--card-json", try Self.json(Self.card("a", priority: 1))])
      #expect(garbage.status == 1)
      #expect(try PythonClient.error(garbage.errorText)?["codeName"] as? String == "UNAUTHENTICATED", "\(garbage.errorText)")

      // Well formed, but signed with another secret: the stream is refused the same way.
      let stranger = try await TokenAuthority(secret: Array("another secret, 32 bytes or more".utf8), nowMillis: WallClock.systemMillis)
      let forged = try await stranger.mint(
        subject: "driver-1", role: .subscriber, topics: ["*"], expiresAtMillis: WallClock.systemMillis() + 3_600_000)
      let refused = try await PythonClient.run(["subscribe", "127.0.0.1:\(port)", "--token", forged, "--topic", "driver/1", "--count", "1"])
      #expect(refused.status == 1)
      let error = try PythonClient.error(refused.errorText)
      #expect(error?["codeName"] as? String == "UNAUTHENTICATED" && error?["code"] as? Int == 16, "\(refused.errorText)")
    }
  }

  // MARK: Support

  /// Runs an in-memory broker on a free loopback port while `body` runs.
  func withBroker(_ body: (Int, BrokerHost.Running) async throws -> Void) async throws {
    try await PythonClient.requireTools()
    let host = BrokerHost(
      storage: InMemoryBrokerStorage(), configuration: BrokerConfiguration(), secret: Self.secret, host: "127.0.0.1", port: 0)
    try await host.run { running in try await body(try #require(running.address.port), running) }
  }

  static func token(_ running: BrokerHost.Running, _ role: Role) async throws -> String {
    try await running.authority.mint(subject: "test", role: role, topics: ["driver/*"], expiresAtMillis: WallClock.systemMillis() + 3_600_000)
  }

  static func withPublisher(port: Int, running: BrokerHost.Running, _ body: (RPCConnection) async throws -> Void) async throws {
    var configuration = ClientConnectionStateMachine.Configuration()
    configuration.authToken = try await token(running, .admin)
    try await RPCClient.withConnection(host: "127.0.0.1", port: port, configuration: configuration, body)
  }

  static func getCards(port: Int, running: BrokerHost.Running, topic: String) async throws -> TopicUpdate {
    var update: TopicUpdate?
    try await withPublisher(port: port, running: running) { connection in
      update = try await connection.unary(BrokerService.getCardsMethod, request: GetCardsRequest(topic: topic), response: TopicUpdate.self)
    }
    return try #require(update)
  }

  static func card(_ id: String, priority: Double, title: String? = nil) -> TrackerCard {
    var card = TrackerCard(cardID: id, priority: priority, isValid: true)
    card.cardType = .browse
    card.lastUpdatedAt = 1_799_999_000
    var trip = TrackerRecentTripsCard(title: title ?? "Trip \(id)")
    trip.formattedTotal = "$18.42"
    var payload = TrackerCardPayload()
    payload.trackerRecentTripsCard = trip
    card.payload = payload
    return card
  }

  /// The card in protobuf's canonical JSON, as `pushline dump --json` prints it.
  static func json(_ card: TrackerCard, oneLine: Bool = false) throws -> String {
    let text = try DumpCommand.render(card.serializedBytes(), as: TrackerCard.self, json: true)
    return oneLine ? text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.joined() : text
  }

  /// The changes of a TopicUpdate's JSON: card id, offset, and whether it is a removal.
  static func changes(_ update: [String: Any]) -> [(id: String, offset: String, removal: Bool)] {
    ((update["changes"] as? [[String: Any]]) ?? []).map {
      ($0["cardID"] as? String ?? "", $0["offset"] as? String ?? "", $0["card"] == nil)
    }
  }
}

/// Runs `tools/pyclient/pushline_client.py` as a child process.
enum PythonClient {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()
  static let script = root.appendingPathComponent("tools/pyclient/pushline_client.py")

  /// python3 with Google's protobuf, and protoc (the client builds its message classes with it).
  static func requireTools() async throws {
    let check = Process()
    check.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    check.arguments = ["sh", "-c", "command -v protoc >/dev/null && python3 -c 'import google.protobuf'"]
    check.standardOutput = FileHandle.nullDevice
    check.standardError = FileHandle.nullDevice
    // Waits through the termination handler: a blocked wait would hold a thread of Swift's
    // cooperative pool, which the brokers of the other tests need.
    let (exits, exited) = AsyncStream<Int32>.makeStream()
    check.terminationHandler = { exited.yield($0.terminationStatus) }
    try check.run()
    var statuses = exits.makeAsyncIterator()
    let status = await statuses.next()
    try #require(status == 0, "the Python client needs python3 with protobuf and protoc: run tools/test.sh")
  }

  /// A running client: its stdout lines as they come, its stderr once it has exited.
  struct Running {
    var lines: AsyncStream<String>
    var exits: AsyncStream<Int32>
    var errorFile: URL
    var directory: URL

    func exitStatus() async -> Int32? {
      var iterator = exits.makeAsyncIterator()
      return await iterator.next()
    }

    func errorText() -> String {
      (try? String(contentsOf: errorFile, encoding: .utf8)) ?? ""
    }
  }

  /// Starts the client with `arguments` (or python3 with them, when `program` is empty); a
  /// watchdog kills it if it is still running after 60 s.
  static func start(_ arguments: [String], input: String = "", program: [String] = [script.path]) throws -> Running {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushline-pyclient-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let inputFile = directory.appendingPathComponent("in"), errorFile = directory.appendingPathComponent("err")
    try Data(input.utf8).write(to: inputFile)
    try Data().write(to: errorFile)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3"] + program + arguments
    process.standardInput = try FileHandle(forReadingFrom: inputFile)
    process.standardError = try FileHandle(forWritingTo: errorFile)
    let output = Pipe()
    process.standardOutput = output
    let (exits, exited) = AsyncStream<Int32>.makeStream()
    let watchdog = Watchdog()
    process.terminationHandler = {
      watchdog.exited()
      exited.yield($0.terminationStatus)
      exited.finish()
    }
    try process.run()
    watchdog.arm(pid: process.processIdentifier, after: .seconds(60))
    return Running(lines: lines(of: output.fileHandleForReading), exits: exits, errorFile: errorFile, directory: directory)
  }

  /// Kills a client still running after its time: a hung client fails its test, not the run.
  final class Watchdog: Sendable {
    private let state = Mutex<(exited: Bool, task: Task<Void, Never>?)>((false, nil))

    func arm(pid: Int32, after timeout: Duration) {
      let task = Task { [self] in
        guard (try? await Task.sleep(for: timeout)) != nil else { return }
        state.withLock { if !$0.exited { _ = kill(pid, SIGKILL) } }
      }
      state.withLock { if $0.exited { task.cancel() } else { $0.task = task } }
    }

    func exited() {
      state.withLock {
        $0.exited = true
        $0.task?.cancel()
      }
    }
  }

  /// Runs the client to its end: exit status, stdout lines, stderr.
  static func run(_ arguments: [String], input: String = "", program: [String] = [script.path]) async throws
    -> (status: Int32?, lines: [String], errorText: String)
  {
    let running = try start(arguments, input: input, program: program)
    defer { try? FileManager.default.removeItem(at: running.directory) }
    var lines: [String] = []
    for await line in running.lines { lines.append(line) }
    let status = await running.exitStatus()
    return (status, lines, running.errorText())
  }

  /// The lines `handle` yields until its end, read on a dispatch thread (the reads block).
  static func lines(of handle: FileHandle) -> AsyncStream<String> {
    let (lines, continuation) = AsyncStream<String>.makeStream()
    DispatchQueue.global().async {
      var buffer: [UInt8] = []
      while case let chunk = handle.availableData, !chunk.isEmpty {
        buffer += chunk
        while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
          continuation.yield(String(decoding: buffer[..<newline], as: UTF8.self))
          buffer.removeSubrange(...newline)
        }
      }
      continuation.finish()
    }
    return lines
  }

  static func object(_ line: String) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
  }

  /// The `error` object the client prints on stderr when a call fails.
  static func error(_ errorText: String) throws -> [String: Any]? {
    guard let line = errorText.split(separator: "\n").last(where: { $0.hasPrefix("{\"error\"") }) else { return nil }
    return try object(String(line))["error"] as? [String: Any]
  }

  /// Cards printed as JSON by the client, read back with `pushline encode`'s parser.
  static func cards(_ value: Any?) throws -> [TrackerCard] {
    let array = try #require(value as? [Any], "no cards in \(String(describing: value))")
    return try array.map { card in
      let text = String(decoding: try JSONSerialization.data(withJSONObject: card), as: UTF8.self)
      return try TrackerCard(serializedBytes: try EncodeCommand.encode(json: text, as: TrackerCard.self))
    }
  }
}
