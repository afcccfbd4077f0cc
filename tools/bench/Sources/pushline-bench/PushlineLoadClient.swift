import NIOCore
import NIOPosix
import PushlineBroker
import PushlineRPC
import PushlineRPCNIO
import PushlineSchema
import PushlineWire

/// The load generator's Pushline connections: Pushline's own frame codec and client state
/// machine, driven on the event loop (no task or stream per connection, one flush per read
/// burst), so that the generator's cost per delivery stays close to the nats-server client's.
/// Subscribers scan `TopicUpdate`s in place (``TopicUpdateSummary``) instead of decoding them.
/// A connection's frames of one burst are encoded back to back into one buffer and written
/// once (``FrameBurst``), as the nats-server publisher batches its PUBs. Connections offer no
/// compression: nats-server does not compress either.
enum PushlineLoadClient {
  static func configuration(token: String) -> ClientConnectionStateMachine.Configuration {
    var configuration = ClientConnectionStateMachine.Configuration(compressions: [], authToken: token)
    configuration.userAgent = "pushline-bench"
    configuration.limits = BrokerService.connectionLimits
    return configuration
  }

  /// Connects a subscriber to `topics` (from their positions, when they have one); the future
  /// completes once the broker's first update (a snapshot, a catch-up or a watermark) has
  /// arrived, i.e. the subscription is live — or, with no topics, once the handshake is done
  /// (a connection without a subscription).
  static func subscribe(
    port: Int, token: String, topics: [TopicPosition], progress: SubscriberProgress, on eventLoop: any EventLoop
  ) -> EventLoopFuture<any Channel> {
    let subscribed = eventLoop.makePromise(of: Void.self)
    let request = topics.isEmpty ? nil : SubscribeRequest(topics: topics).serializedBytes()
    let configuration = configuration(token: token)
    let connected = ClientBootstrap(group: eventLoop)
      .channelOption(.tcpOption(.tcp_nodelay), value: 1)
      .connectTimeout(.seconds(20))
      .channelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.addHandlers([
            FrameDecodingHandler(maxPayloadLength: configuration.limits.maxFrameSize),
            PushlineSubscriberHandler(
              configuration: configuration, request: request, progress: progress, subscribed: subscribed),
          ])
        }
      }
      .connect(host: "127.0.0.1", port: port)
    connected.whenFailure { subscribed.fail($0) }
    // A refused subscriber lets its connection go (the broker would keep it).
    subscribed.futureResult.whenFailure { _ in connected.whenSuccess { $0.close(promise: nil) } }
    return connected.flatMap { channel in subscribed.futureResult.map { channel } }
  }

  /// Runs `plan` on one connection; completes when every publish is acknowledged.
  static func publish(port: Int, token: String, plan: PublishPlan, on eventLoop: any EventLoop) -> EventLoopFuture<PublishResult> {
    let done = eventLoop.makePromise(of: PublishResult.self)
    let configuration = configuration(token: token)
    let connected = ClientBootstrap(group: eventLoop)
      .channelOption(.tcpOption(.tcp_nodelay), value: 1)
      .connectTimeout(.seconds(20))
      .channelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.addHandlers([
            FrameDecodingHandler(maxPayloadLength: configuration.limits.maxFrameSize),
            PushlinePublisherHandler(configuration: configuration, plan: plan, done: done),
          ])
        }
      }
      .connect(host: "127.0.0.1", port: port)
    connected.whenFailure { done.fail($0) }
    done.futureResult.whenComplete { _ in connected.whenSuccess { $0.close(promise: nil) } }
    return done.futureResult
  }
}

/// The frames a load connection writes in one burst, encoded back to back into one buffer that
/// goes to the channel in one write and one flush.
struct FrameBurst {
  private var buffer: ByteBuffer?

  /// Executes `action` if it writes or closes: its frames join the burst; a close sends the
  /// burst, then closes. Returns false for the machine's other actions (its events), which are
  /// the caller's to handle — in order, one action at a time, so that a close follows the
  /// events before it.
  mutating func execute(_ action: ClientConnectionStateMachine.Action, context: ChannelHandlerContext) -> Bool {
    switch action {
    case .write(let elements):
      append(elements, context: context)
    case .close(let elements):
      append(elements, context: context)
      send(context: context)
      context.close(promise: nil)
    default:
      return false
    }
    return true
  }

  /// Writes and flushes the burst's frames, if any.
  mutating func send(context: ChannelHandlerContext) {
    guard let frames = buffer else { return }
    buffer = nil
    context.writeAndFlush(NIOAny(frames), promise: nil)
  }

  private mutating func append(_ elements: [ConnectionElement], context: ChannelHandlerContext) {
    var frames = buffer ?? context.channel.allocator.buffer(capacity: 4096)
    buffer = nil  // held once while it grows
    for element in elements { FrameEncoder().encode(data: element, out: &frames) }
    buffer = frames
  }
}

/// One subscriber: handshake, one Subscribe call, then counts the changes it receives.
final class PushlineSubscriberHandler: ChannelInboundHandler {
  typealias InboundIn = ConnectionElement
  typealias OutboundOut = ByteBuffer

  private var machine: ClientConnectionStateMachine
  private var burst = FrameBurst()
  private let request: [UInt8]?
  private let progress: SubscriberProgress
  private let subscribed: EventLoopPromise<Void>
  private var callID: UInt32?
  private var isSubscribed = false
  private var stamps: [Int64] = []

  init(
    configuration: ClientConnectionStateMachine.Configuration, request: [UInt8]?, progress: SubscriberProgress,
    subscribed: EventLoopPromise<Void>
  ) {
    machine = ClientConnectionStateMachine(configuration: configuration)
    self.request = request
    self.progress = progress
    self.subscribed = subscribed
  }

  func channelActive(context: ChannelHandlerContext) {
    run(machine.start(), context: context)
    // The Subscribe goes out with the ClientHello, as `RPCClient` sends its first calls: one
    // round trip to a live subscription.
    subscribe(context: context)
    burst.send(context: context)
    context.fireChannelActive()
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    let element = unwrapInboundIn(data)
    // The hot path: a MESSAGE of the subscription, scanned in place.
    if case .frame(let frame) = element, frame.kind == .message, frame.callID == callID {
      deliver(frame.payload, context: context)
      return
    }
    run(machine.received(element), context: context)
  }

  func channelReadComplete(context: ChannelHandlerContext) {
    burst.send(context: context)
  }

  func channelInactive(context: ChannelHandlerContext) {
    fail("the connection closed", context: context, isRetryable: true)
    context.fireChannelInactive()
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    fail("\(error)", context: context, isRetryable: true)
    context.close(promise: nil)
  }

  private func deliver(_ payload: [UInt8], context: ChannelHandlerContext) {
    let now = ProcessStats.monotonicNanos()
    stamps.removeAll(keepingCapacity: true)
    let summary = payload.withUnsafeBytes { raw -> TopicUpdateSummary? in
      guard raw.first == 0 else { return nil }  // compression was not offered
      return TopicUpdateSummary.scan(UnsafeRawBufferPointer(rebasing: raw.dropFirst())) { stamps.append($0) }
    }
    guard let summary else { return fail("a TopicUpdate that does not scan", context: context) }
    if summary.isComplete {
      progress.resumeEpoch.store(summary.epoch, ordering: .relaxed)
      progress.resumeOffset.store(summary.throughOffset, ordering: .relaxed)
    }
    if summary.isSnapshot {
      progress.position.store(summary.throughOffset, ordering: .relaxed)
    } else {
      progress.delivered(summary.changes, position: summary.throughOffset, now: now, stamps: stamps)
    }
    if !isSubscribed {
      isSubscribed = true
      subscribed.succeed()
    }
  }

  private func run(_ actions: [ClientConnectionStateMachine.Action], context: ChannelHandlerContext) {
    for action in actions where !burst.execute(action, context: context) {
      handle(action, context: context)
    }
  }

  private func handle(_ action: ClientConnectionStateMachine.Action, context: ChannelHandlerContext) {
    switch action {
    case .connectionReady where request == nil:
      isSubscribed = true
      subscribed.succeed()
    case .finishCall(_, let status):
      progress.endStatusCode.store(Int(status.code), ordering: .relaxed)
      // Refused by the broker's admission limit: subscribe again when it says, as clients do.
      if !isSubscribed, status.code == StatusCode.unavailable.rawValue, let wait = status.retryAfterMillis {
        let handler = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: .milliseconds(Int64(wait))) {
          let (handler, context) = handler.value
          guard context.channel.isActive, !handler.isSubscribed else { return }  // closed or failed meanwhile
          handler.subscribe(context: context)
        }
        return
      }
      fail("the subscription ended: status \(status.code) \(status.message ?? "")", context: context)
    case .goAwayReceived(let goAway):
      fail("GOAWAY \(goAway.message ?? "")", context: context)
    default:
      break
    }
  }

  /// Starts the Subscribe call, if the subscriber has a topic.
  private func subscribe(context: ChannelHandlerContext) {
    guard let request else { return }
    let (id, start) = machine.startCall(CallStart(method: BrokerService.subscribeMethod))
    guard let id else { return fail("the broker refused the call", context: context) }
    callID = id
    run(start + machine.send(message: request, compressed: false, callID: id) + machine.halfClose(callID: id), context: context)
    burst.send(context: context)
  }

  /// Fails the subscriber: its subscribe, if it is not live yet — `isRetryable` when the
  /// connection failed rather than the broker refusing.
  private func fail(_ reason: String, context: ChannelHandlerContext, isRetryable: Bool = false) {
    if !isSubscribed {
      isSubscribed = true
      subscribed.fail(LoadError("subscriber: \(reason)", isRetryable: isRetryable))
    }
    progress.fail(reason)
  }
}

/// The publisher: up to `plan.window` publishes in flight on one connection — on one
/// `PublishStream` call, or a `Publish` call each — each a `PublishRequest` of
/// `plan.changesPerPublish` cards of one topic, topics round-robin, refilled in bursts once
/// half the window is acknowledged; at `plan.rate` when given (every 0.5 ms tick sends what is
/// due, within the window).
final class PushlinePublisherHandler: ChannelInboundHandler {
  typealias InboundIn = ConnectionElement
  typealias OutboundOut = ByteBuffer

  private var machine: ClientConnectionStateMachine
  private var burst = FrameBurst()
  private let plan: PublishPlan
  private let done: EventLoopPromise<PublishResult>
  private var responses: [UInt32: Int] = [:]  // call id → topic index (unary publishes)
  /// The stream's call, if publishes go on one.
  private var streamCallID: UInt32?
  /// The topic index of each publish the stream has not answered, oldest first.
  private var unansweredTopics = CircularBuffer<Int>()
  private var inFlight: Int { streamCallID == nil ? responses.count : unansweredTopics.count }
  private var finalOffsets: [Int64]
  private var started: Int64 = 0
  private var sent = 0
  private var acknowledged = 0
  private var isFinished = false
  private var ticker: RepeatedTask?

  init(configuration: ClientConnectionStateMachine.Configuration, plan: PublishPlan, done: EventLoopPromise<PublishResult>) {
    machine = ClientConnectionStateMachine(configuration: configuration)
    self.plan = plan
    self.done = done
    finalOffsets = Array(repeating: 0, count: plan.topics.count)
  }

  func channelActive(context: ChannelHandlerContext) {
    run(machine.start(), context: context)
    burst.send(context: context)
    context.fireChannelActive()
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    run(machine.received(unwrapInboundIn(data)), context: context)
  }

  func channelReadComplete(context: ChannelHandlerContext) {
    burst.send(context: context)
  }

  func channelInactive(context: ChannelHandlerContext) {
    finish(.failure(LoadError("publisher: the connection closed after \(acknowledged) acknowledgements")))
    context.fireChannelInactive()
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    finish(.failure(error))
    context.close(promise: nil)
  }

  private func pump(context: ChannelHandlerContext) {
    let now = ProcessStats.monotonicNanos()
    let allowed = plan.allowed(start: started, now: now)
    while sent < allowed, inFlight < plan.window {
      let (topic, firstCard) = plan.target(of: sent)
      let stamp = plan.stamp(of: sent, start: started, now: now)
      let changes = (0..<plan.changesPerPublish).map { index in
        CardChange(upserting: BenchCard.card(cardID: BenchCard.cardID((firstCard + index) % plan.cardsPerTopic), stampNanos: stamp))
      }
      let request = PublishRequest(topic: plan.topics[topic], changes: changes).serializedBytes()
      if let callID = streamCallID {
        unansweredTopics.append(topic)
        sent += 1
        run(machine.send(message: request, compressed: false, callID: callID), context: context)
        continue
      }
      let (id, start) = machine.startCall(CallStart(method: BrokerService.publishMethod))
      guard let id else { return finish(.failure(LoadError("publisher: the broker refused a call"))) }
      responses[id] = topic
      sent += 1
      run(start + machine.send(message: request, compressed: false, callID: id) + machine.halfClose(callID: id), context: context)
    }
    if sent == plan.publishes {
      ticker?.cancel()
      ticker = nil
    }
  }

  private var pendingResponse: [UInt32: [UInt8]] = [:]

  private func run(_ actions: [ClientConnectionStateMachine.Action], context: ChannelHandlerContext) {
    for action in actions where !burst.execute(action, context: context) {
      handle(action, context: context)
    }
  }

  private func handle(_ action: ClientConnectionStateMachine.Action, context: ChannelHandlerContext) {
    switch action {
    case .connectionReady:
      started = ProcessStats.monotonicNanos()
      if plan.streams {
        let (id, start) = machine.startCall(CallStart(method: BrokerService.publishStreamMethod))
        guard let id else { return finish(.failure(LoadError("publisher: the broker refused the stream"))) }
        streamCallID = id
        run(start, context: context)
      }
      pump(context: context)
      burst.send(context: context)
      if plan.rate != nil {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        ticker = context.eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(1), delay: .microseconds(500)) { _ in
          let (handler, context) = loopBound.value
          handler.pump(context: context)
          handler.burst.send(context: context)
        }
      }
    case .deliverMessage(let id, let payload, _) where id == streamCallID:
      let outcome = try? PublishOutcome(serializedBytes: payload)
      guard let response = outcome?.response, let topic = unansweredTopics.popFirst() else {
        return finish(.failure(LoadError("publish refused: \(outcome?.status?.message ?? "an outcome that does not decode")")))
      }
      acknowledge(response, topic: topic, context: context)
    case .deliverMessage(let id, let payload, _):
      pendingResponse[id] = payload
    case .finishCall(let id, let status):
      guard status.code == StatusCode.ok.rawValue, let topic = responses.removeValue(forKey: id),
        let bytes = pendingResponse.removeValue(forKey: id), let response = try? PublishResponse(serializedBytes: bytes)
      else {
        return finish(.failure(LoadError("publish failed: status \(status.code) \(status.message ?? "")")))
      }
      acknowledge(response, topic: topic, context: context)
    case .goAwayReceived(let goAway):
      finish(.failure(LoadError("publisher: GOAWAY \(goAway.message ?? "")")))
    default:
      break
    }
  }

  private func acknowledge(_ response: PublishResponse, topic: Int, context: ChannelHandlerContext) {
    finalOffsets[topic] = max(finalOffsets[topic], response.lastOffset)
    acknowledged += 1
    if acknowledged == plan.publishes {
      finish(.success(PublishResult(startNanos: started, endNanos: ProcessStats.monotonicNanos(), finalOffsets: finalOffsets)))
    } else if plan.rate == nil, inFlight <= plan.window / 2 {
      // Refill in bursts of half a window: one write for many publishes, as the nats-server
      // publisher writes many PUBs at once (the rate-limited publisher refills on its tick).
      // The burst leaves at once, not after the rest of the answers read with it: the broker
      // answers a commit's publishes together, and would otherwise wait, idle, while this
      // side reads them all before it sends anything (a tenth of its deliveries/s).
      pump(context: context)
      burst.send(context: context)
    }
  }

  private func finish(_ result: Result<PublishResult, any Error>) {
    guard !isFinished else { return }
    isFinished = true
    ticker?.cancel()
    ticker = nil
    done.completeWith(result)
  }
}

/// A load generator failure, with what went wrong.
struct LoadError: Error, CustomStringConvertible {
  var description: String
  /// The connection failed (closed or reset) rather than the broker refusing: trying again
  /// on a new one may succeed.
  var isRetryable = false

  init(_ description: String, isRetryable: Bool = false) {
    self.description = description
    self.isRetryable = isRetryable
  }
}
