import ArgumentParser
import Foundation
import PushlineBroker
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema

/// `pushline publish`: publishes cards written as JSON, for manual testing and scripts.
struct PublishCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "publish",
    abstract: "Publish tracker cards (JSON, one per line) to a topic.",
    discussion: """
      Reads TrackerCard JSON objects, one per line, from FILE or standard input (blank lines \\
      skipped), and publishes them with the --remove'd card ids as one atomic batch. Prints the \\
      epoch and offsets. The token comes from --token or $PUSHLINE_TOKEN.
      """
  )

  @Argument(help: "The broker, as HOST:PORT.")
  var address: String

  @Option(help: "The topic, e.g. driver/42.")
  var topic: String

  @Argument(help: "A file of cards, one JSON object per line; standard input if absent.")
  var file: String?

  @Option(name: .customLong("remove"), help: "A card id to remove (repeat for more).")
  var removals: [String] = []

  @Option(help: "An idempotency key, so that re-running the same publish applies it once.")
  var idempotencyKey: String?

  @Option(help: "The auth token (default: $PUSHLINE_TOKEN).")
  var token: String?

  func validate() throws {
    guard ServerAddress(address) != nil else { throw ValidationError("expected HOST:PORT, got '\(address)'") }
  }

  func run() async throws {
    let server = ServerAddress(address)!
    var request = PublishRequest(topic: topic)
    request.idempotencyKey = idempotencyKey
    request.changes = try Self.cards(in: String(decoding: InputSource.read(path: file), as: UTF8.self)).map { CardChange(upserting: $0) }
      + removals.map { CardChange(removing: $0) }
    var configuration = ClientConnectionStateMachine.Configuration()
    configuration.authToken = token ?? ProcessInfo.processInfo.environment["PUSHLINE_TOKEN"]
    do {
      let response = try await RPCClient.withConnection(host: server.host, port: server.port, configuration: configuration) {
        try await $0.unary(BrokerService.publishMethod, request: request, response: PublishResponse.self)
      }
      let replayed = response.replayed == true ? " (a retry: already applied)" : ""
      print("published \(request.changes.count) change(s) to \(topic): epoch \(response.epoch), offsets \(response.firstOffset)…\(response.lastOffset)\(replayed)")
    } catch let error as RPCError {
      throw CommandFailure("\(server): \(error)")
    }
  }

  /// The cards of `text`, one JSON object per non-blank line.
  static func cards(in text: String) throws -> [TrackerCard] {
    try text.split(whereSeparator: \.isNewline).enumerated().compactMap { index, line in
      guard !line.allSatisfy(\.isWhitespace) else { return nil }
      do {
        return try ProtoJSON.decode(TrackerCard.self, from: String(line)) as? TrackerCard
      } catch {
        throw CommandFailure("line \(index + 1): \(error)")
      }
    }
  }
}
