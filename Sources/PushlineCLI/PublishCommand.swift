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
    abstract: "Publish tracker cards, written as JSON, to a topic.",
    discussion: """
      Reads TrackerCards from FILE or standard input: JSON lines (one card object per line, \
      blank lines skipped), or one JSON document, pretty-printed or not, that is a card object \
      or an array of them — what `pushline dump --json` prints. Publishes them, then the \
      --remove'd card ids, each card at most once. Up to 10,000 changes and 4 MiB go as one \
      atomic batch; more go as several, one after another, each acknowledged before the next \
      (with --idempotency-key K, batch n from 2 on carries the key K#n, so a key of your own \
      ending in #n could collide with a generated one). Every key must fit the broker's limit of \
      \(Broker.maxKeySize) bytes, K#n included: a key too long for the batches the input needs \
      is refused before anything is sent. Prints each batch's epoch and offsets. An error names the line, or the card's index in an array. The token \
      comes from --token or $PUSHLINE_TOKEN.
      """
  )

  @Argument(help: "The broker, as HOST:PORT.")
  var address: String

  @Option(help: "The topic, e.g. driver/42.")
  var topic: String

  @Argument(help: "A file of cards as JSON lines, or one card or array of cards; standard input if absent or '-'.")
  var file: String?

  @Option(name: .customLong("remove"), help: "A card id to remove (repeat for more).")
  var removals: [String] = []

  @Option(help: "An idempotency key, so that re-running the same publish applies it once (at most \(Broker.maxKeySize) bytes, #n included).")
  var idempotencyKey: String?

  @Option(help: "The auth token (default: $PUSHLINE_TOKEN).")
  var token: String?

  func validate() throws {
    guard ServerAddress(address) != nil else { throw ValidationError("expected HOST:PORT, got '\(address)'") }
  }

  func run() async throws {
    let server = ServerAddress(address)!
    let text = try InputSource.readText(path: file)
    let source = InputSource.name(of: file)
    let cards: [TrackerCard]
    do {
      cards = try CardInput.cards(in: text)
    } catch {
      throw CommandFailure("\(source), \(error)")
    }
    let changes = try Self.changes(upserting: cards, removing: removals)
    guard !changes.isEmpty else { throw CommandFailure("nothing to publish: no cards in \(source), and no --remove") }
    let requests = try PublishRequest.batches(
      of: changes, to: topic, idempotencyKey: idempotencyKey,
      maxChanges: BrokerConfiguration.defaultMaxChangesPerPublish, maxBytes: BrokerService.connectionLimits.maxMessageSize,
      maxKeySize: Broker.maxKeySize)
    var configuration = ClientConnectionStateMachine.Configuration()
    configuration.authToken = token ?? ProcessInfo.processInfo.environment["PUSHLINE_TOKEN"]
    _ = try await Self.publish(requests, to: server, configuration: configuration) { print($0) }
  }

  /// The changes of a publish: `cards` upserted, then `removals` removed.
  ///
  /// - Throws: `CommandFailure` when a removal names a card already in the publish, a card
  ///   is larger than the broker takes (``Broker/maxCardSize``), or a card's or a removal's ID
  ///   is one the broker refuses (``Broker/refusal(ofKey:as:)``): refused before anything is
  ///   sent, rather than after the batches before it were published.
  static func changes(upserting cards: [TrackerCard], removing removals: [String]) throws -> [CardChange] {
    for (id, source) in cards.map({ ($0.cardID, "a card") }) + removals.map({ ($0, "--remove") }) {
      if let refusal = Broker.refusal(ofKey: id, as: "cardID") {
        throw CommandFailure("\(source): \(refusal); nothing was published")
      }
    }
    if let large = cards.first(where: { $0.encodedSize() > Broker.maxCardSize }) {
      throw CommandFailure(
        "card \"\(large.cardID)\" is \(large.encodedSize()) bytes, over the broker's limit of \(Broker.maxCardSize) a card; nothing was published")
    }
    var named = Set(cards.map(\.cardID))
    for id in removals where !named.insert(id).inserted {
      throw CommandFailure("--remove \(id): the card is already in this publish, which changes each card at most once")
    }
    return cards.map { CardChange(upserting: $0) } + removals.map { CardChange(removing: $0) }
  }

  /// Sends `requests` on one connection to `server`, one after another, each once the one
  /// before it is acknowledged, and reports each acknowledgement to `say` as it comes.
  ///
  /// - Returns: The responses, in order.
  /// - Throws: `CommandFailure` naming the server, the refused batch when there are several
  ///   (those before it were published), and the status.
  static func publish(
    _ requests: [PublishRequest], to server: ServerAddress, configuration: ClientConnectionStateMachine.Configuration,
    say: (String) -> Void
  ) async throws -> [PublishResponse] {
    var responses: [PublishResponse] = []
    do {
      try await RPCClient.withConnection(host: server.host, port: server.port, configuration: configuration) { connection in
        for request in requests {
          let response = try await connection.unary(BrokerService.publishMethod, request: request, response: PublishResponse.self)
          responses.append(response)
          say(report(request, response, batch: responses.count, of: requests.count))
        }
      }
      return responses
    } catch let error as RPCError {
      let batch = requests.count > 1 ? " (batch \(responses.count + 1) of \(requests.count))" : ""
      throw CommandFailure("\(server)\(batch): \(error)")
    }
  }

  /// The line `publish` prints for an acknowledged publish.
  private static func report(_ request: PublishRequest, _ response: PublishResponse, batch: Int, of batches: Int) -> String {
    let part = batches > 1 ? " (batch \(batch) of \(batches))" : ""
    let replayed = response.replayed == true ? " (a retry: already applied)" : ""
    return "published \(request.changes.count) change(s) to \(request.topic)\(part): epoch \(response.epoch), "
      + "offsets \(response.firstOffset)…\(response.lastOffset)\(replayed)"
  }
}
