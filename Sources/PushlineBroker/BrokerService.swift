public import PushlineRPC
import PushlineSchema

/// The broker's methods on Pushline RPC: `/pushline.Publisher/Publish` and its pipelined
/// form `/pushline.Publisher/PublishStream`, `/pushline.Tracker/Subscribe` and
/// `/pushline.Tracker/GetCards`, each authenticated with the connection's token.
public enum BrokerService {
  /// The publish method's name.
  public static let publishMethod = "/pushline.Publisher/Publish"
  /// The publish stream's name: many publishes on one call, each answered by a
  /// `PublishOutcome` in order, for publishers that publish continuously.
  public static let publishStreamMethod = "/pushline.Publisher/PublishStream"
  /// The subscribe method's name.
  public static let subscribeMethod = "/pushline.Tracker/Subscribe"
  /// The pull method's name.
  public static let getCardsMethod = "/pushline.Tracker/GetCards"

  /// The limits a broker's connections announce: the protocol's frame and message sizes, and
  /// 8,192 concurrent calls instead of 100 (for every method), so that one publisher can keep
  /// thousands of publishes in flight. Each waits for its group commit, so the window, not the
  /// broker, would otherwise cap a publisher at a window per commit; and the commits it fills
  /// batch the fan-out (the benchmark's publisher is fastest with 8,192 in flight: half as many
  /// cost it a quarter of its deliveries a second). A client still announces its own limit,
  /// and the smaller one holds; on a `PublishStream` the limit counts publishes unanswered. The
  /// memory that requests still arriving can pin is bounded per connection by
  /// `ServerConnectionStateMachine.Configuration.maxBufferedRequestBytes`, not by this limit;
  /// a complete publish waits only for the next commit.
  public static let connectionLimits = ConnectionLimits(
    maxFrameSize: ConnectionLimits.defaults.maxFrameSize, maxMessageSize: ConnectionLimits.defaults.maxMessageSize,
    maxConcurrentCalls: 8_192)

  /// Adds the broker's methods to `router`.
  public static func register(_ broker: Broker, authority: TokenAuthority, in router: inout RPCRouter) {
    // Publishes run without a task: on the connection's event loop up to the commit, whose
    // callback answers them (a task only for a token not verified yet). A commit they start
    // runs on that loop too, after the publishes read with them.
    router.registerUnary(publishMethod, request: EncodedPublishRequest.self, response: PublishResponse.self) {
      request, context, completion in
      publish(request, to: broker, authority: authority, context: context, completion: completion)
    }
    router.registerPipelined(publishStreamMethod, request: EncodedPublishRequest.self, response: PublishOutcome.self) {
      request, context, answer in
      publish(request, to: broker, authority: authority, context: context, completion: StreamedPublishCompletion(answer: answer))
    }
    router.registerUnary(getCardsMethod, request: GetCardsRequest.self, response: EncodedTopicUpdate.self) { request, context in
      let principal = try await authority.authenticate(context.peer.authToken)
      let limit = context.peer.limits.maxMessageSize
      return try await broker.buildingStarts(of: [request.topic]) { () throws(RPCError) in
        try broker.cards(in: request.topic, for: principal, maxMessageSize: limit)
      }
    }
    router.registerServerStreaming(subscribeMethod, request: SubscribeRequest.self, response: EncodedTopicUpdate.self) {
      request, writer, context in
      let principal = try await authority.authenticate(context.peer.authToken)
      let limit = context.peer.limits.maxMessageSize
      let subscription = try await broker.buildingStarts(of: request.topics.map(\.topic)) { () throws(RPCError) in
        try broker.subscribe(request, for: principal, maxMessageSize: limit)
      }
      // The transport pulls the subscription's updates on the connection's event loop when
      // the fan-out wakes it: no task switch per delivery, and no task waiting per stream (the
      // stream's end unsubscribes). Without a pump, this task writes.
      if let pump = writer.pump(from: SubscriptionResponses(broker: broker, subscription: subscription)) {
        return subscription.drain(with: pump)
      }
      defer { broker.unsubscribe(subscription) }
      while true {
        for update in try await broker.nextUpdates(for: subscription) { try await writer.write(update) }
      }
    }
  }

  /// Publishes `request` as the connection's principal, answering through `completion`.
  private static func publish(
    _ request: EncodedPublishRequest, to broker: Broker, authority: TokenAuthority, context: ServerContext,
    completion: some PublishCompletion
  ) {
    do throws(RPCError) {
      if let principal = try authority.verifiedPrincipal(context.peer.authToken) {
        return broker.publish(request, for: principal, committingOn: context.executor, completion: completion)
      }
    } catch {
      return completion.complete(with: .failure(error))
    }
    // A token not verified yet: its publishes wait for its check, in the order they came.
    let executor = context.executor
    authority.withPrincipal(of: context.peer.authToken) { result in
      switch result {
      case .success(let principal):
        broker.publish(request, for: principal, committingOn: executor, isHeldAlready: true, completion: completion)
      case .failure(let error): completion.complete(with: .failure(error))
      }
    }
  }
}
