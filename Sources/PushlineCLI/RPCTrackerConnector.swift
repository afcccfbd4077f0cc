import PushlineBroker
import PushlineClient
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema

/// The client core's sessions over Pushline RPC on TCP, with a token.
struct RPCTrackerConnector: TrackerConnector {
  var host: String
  var port: Int
  var token: String

  func withSession(_ body: (any TrackerSession) async throws -> Void) async throws {
    var configuration = ClientConnectionStateMachine.Configuration()
    configuration.authToken = token
    try await RPCClient.withConnection(host: host, port: port, configuration: configuration) { connection in
      try await body(Session(connection: connection))
    }
  }

  struct Session: TrackerSession {
    var connection: RPCConnection

    func cards(in topic: String) async throws -> TopicUpdate {
      try await connection.unary(BrokerService.getCardsMethod, request: GetCardsRequest(topic: topic), response: TopicUpdate.self)
    }

    func established() async throws -> Int64? {
      try await connection.handshake().serverTimeMillis
    }

    /// The subscription's updates, pulled as the tracker applies them: a broker sending faster
    /// than that meets the connection's backpressure (``RPCResponseStream``).
    func updates(from positions: [TopicPosition]) -> AsyncThrowingStream<TopicUpdate, any Error> {
      .pulling(
        connection.serverStreaming(
          BrokerService.subscribeMethod, request: SubscribeRequest(topics: positions), response: TopicUpdate.self))
    }
  }
}
