import NIOCore
import NIOPosix

/// A minimal client of nats-server's core text protocol — CONNECT, SUB, PUB, MSG, PING/PONG —
/// for the load generator: subscribers count MSGs and read the card's timestamp in place;
/// the publisher writes PUBs (fire-and-forget: the protocol has no acknowledgement) and ends
/// with a PING whose PONG says the server has processed them all.
enum NATSClient {
  static let connect = "CONNECT {\"verbose\":false,\"pedantic\":false,\"name\":\"pushline-bench\",\"lang\":\"swift\",\"version\":\"1\"}\r\n"

  /// Connects a subscriber to `subject`; the future completes at the PONG that follows its
  /// SUB, when the server has registered the subscription (with no subject: a connection
  /// without a subscription, at the PONG after CONNECT).
  static func subscribe(port: Int, subject: String?, progress: SubscriberProgress, on eventLoop: any EventLoop) -> EventLoopFuture<any Channel> {
    let subscribed = eventLoop.makePromise(of: Void.self)
    let connected = ClientBootstrap(group: eventLoop)
      .channelOption(.tcpOption(.tcp_nodelay), value: 1)
      .connectTimeout(.seconds(20))
      .channelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.addHandlers([
            NATSDecodingHandler(),
            NATSSubscriberHandler(subject: subject, progress: progress, subscribed: subscribed),
          ])
        }
      }
      .connect(host: "127.0.0.1", port: port)
    connected.whenFailure { subscribed.fail($0) }
    return connected.flatMap { channel in subscribed.futureResult.map { channel } }
  }

  /// Runs `plan` on one connection; completes at the PONG after the last PUB.
  static func publish(port: Int, plan: PublishPlan, on eventLoop: any EventLoop) -> EventLoopFuture<PublishResult> {
    let done = eventLoop.makePromise(of: PublishResult.self)
    let connected = ClientBootstrap(group: eventLoop)
      .channelOption(.tcpOption(.tcp_nodelay), value: 1)
      .connectTimeout(.seconds(20))
      .channelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.addHandlers([
            NATSDecodingHandler(), NATSPublisherHandler(plan: plan, done: done),
          ])
        }
      }
      .connect(host: "127.0.0.1", port: port)
    connected.whenFailure { done.fail($0) }
    done.futureResult.whenComplete { _ in connected.whenSuccess { $0.close(promise: nil) } }
    return done.futureResult
  }
}

/// What nats-server sends.
enum NATSMessage {
  case msg(payload: ByteBuffer)
  case ping
  case pong
  case error(String)
  case other
}

/// Splits nats-server's byte stream into operations: `MSG <subject> <sid> [reply] <size>` lines
/// with their payloads, PING, PONG, -ERR; INFO and +OK are passed as `other`. A plain loop over
/// each read, as Pushline's `FrameDecodingHandler` is for its clients, so that the generator's
/// two kinds of subscriber pay alike for splitting their reads; the bytes of an unfinished
/// operation are copied out and joined by the next read's.
final class NATSDecodingHandler: ChannelInboundHandler {
  typealias InboundIn = ByteBuffer
  typealias InboundOut = NATSMessage

  private var unfinished = UnfinishedBytes()

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    var bytes = unfinished.joined(unwrapInboundIn(data))
    do {
      while let message = try Self.next(from: &bytes) { context.fireChannelRead(wrapInboundOut(message)) }
    } catch {
      return context.fireErrorCaught(error)
    }
    unfinished.keep(&bytes, allocator: context.channel.allocator)
  }

  /// Reads one operation, or returns `nil` (reading nothing) when more bytes are needed.
  private static func next(from buffer: inout ByteBuffer) throws -> NATSMessage? {
    let view = buffer.readableBytesView
    guard let newline = view.firstIndex(of: UInt8(ascii: "\n")) else {
      if buffer.readableBytes > 4096 { throw LoadError("nats: a line longer than 4 KiB") }
      return nil
    }
    let lineLength = newline - view.startIndex + 1
    let first = view.first ?? 0
    if first == UInt8(ascii: "M") {
      // MSG <subject> <sid> [reply-to] <#bytes>\r\n<payload>\r\n
      var end = newline
      if end > view.startIndex, view[end - 1] == UInt8(ascii: "\r") { end -= 1 }
      var size = 0
      var multiplier = 1
      while end > view.startIndex, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(view[end - 1]) {
        size += Int(view[end - 1] - UInt8(ascii: "0")) * multiplier
        multiplier *= 10
        end -= 1
      }
      guard buffer.readableBytes >= lineLength + size + 2 else { return nil }
      buffer.moveReaderIndex(forwardBy: lineLength)
      let payload = buffer.readSlice(length: size)!
      buffer.moveReaderIndex(forwardBy: 2)
      return .msg(payload: payload)
    }
    let line = buffer.readString(length: lineLength) ?? ""
    return switch first {
    case UInt8(ascii: "P"): line.hasPrefix("PING") ? .ping : .pong
    case UInt8(ascii: "-"): .error(String(line.dropLast(2)))
    default: .other
    }
  }
}

/// One subscriber: CONNECT, SUB, PING; then counts MSGs.
final class NATSSubscriberHandler: ChannelInboundHandler {
  typealias InboundIn = NATSMessage
  typealias OutboundOut = ByteBuffer

  private let subject: String?
  private let progress: SubscriberProgress
  private let subscribed: EventLoopPromise<Void>
  private var isSubscribed = false
  private var count: Int64 = 0

  init(subject: String?, progress: SubscriberProgress, subscribed: EventLoopPromise<Void>) {
    self.subject = subject
    self.progress = progress
    self.subscribed = subscribed
  }

  func channelActive(context: ChannelHandlerContext) {
    context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: NATSClient.connect + (subject.map { "SUB \($0) 1\r\n" } ?? "") + "PING\r\n")), promise: nil)
    context.fireChannelActive()
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    switch unwrapInboundIn(data) {
    case .msg(let payload):
      let now = ProcessStats.monotonicNanos()
      count += 1
      var stamps: [Int64] = []
      if progress.recordsLatency, let stamp = payload.withUnsafeReadableBytes({ TopicUpdateSummary.stamp(inCard: $0) }) {
        stamps = [stamp]
      }
      progress.delivered(1, position: count, now: now, stamps: stamps)
    case .ping:
      context.write(wrapOutboundOut(ByteBuffer(string: "PONG\r\n")), promise: nil)
    case .pong:
      if !isSubscribed {
        isSubscribed = true
        subscribed.succeed()
      }
    case .error(let message):
      fail(message)
    case .other:
      break
    }
  }

  func channelReadComplete(context: ChannelHandlerContext) {
    context.flush()
  }

  func channelInactive(context: ChannelHandlerContext) {
    fail("the connection closed (a slow consumer?)")
    context.fireChannelInactive()
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    fail("\(error)")
    context.close(promise: nil)
  }

  private func fail(_ reason: String) {
    if !isSubscribed {
      isSubscribed = true
      subscribed.fail(LoadError("nats subscriber: \(reason)"))
    }
    progress.fail(reason)
  }
}

/// The publisher: PUBs of the card to the plan's subjects round-robin, as fast as the socket
/// takes them (batched into one buffer per burst) or at the plan's rate, then a PING.
final class NATSPublisherHandler: ChannelInboundHandler {
  typealias InboundIn = NATSMessage
  typealias OutboundOut = ByteBuffer

  private let plan: PublishPlan
  private let done: EventLoopPromise<PublishResult>
  private var started: Int64 = 0
  private var sent = 0
  private var isReady = false
  private var isFinished = false
  private var pingSent = false
  private var ticker: RepeatedTask?

  init(plan: PublishPlan, done: EventLoopPromise<PublishResult>) {
    self.plan = plan
    self.done = done
  }

  func channelActive(context: ChannelHandlerContext) {
    context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: NATSClient.connect + "PING\r\n")), promise: nil)
    context.fireChannelActive()
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    switch unwrapInboundIn(data) {
    case .pong where !isReady:
      isReady = true
      started = ProcessStats.monotonicNanos()
      pump(context: context)
      if plan.rate != nil {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        ticker = context.eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(1), delay: .microseconds(500)) { _ in
          let (handler, context) = loopBound.value
          handler.pump(context: context)
        }
      }
    case .pong:
      finish(.success(PublishResult(startNanos: started, endNanos: ProcessStats.monotonicNanos(), finalOffsets: [])))
    case .ping:
      context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: "PONG\r\n")), promise: nil)
    case .error(let message):
      finish(.failure(LoadError("nats publisher: \(message)")))
    case .msg, .other:
      break
    }
  }

  func channelWritabilityChanged(context: ChannelHandlerContext) {
    if context.channel.isWritable, isReady { pump(context: context) }
    context.fireChannelWritabilityChanged()
  }

  func channelInactive(context: ChannelHandlerContext) {
    finish(.failure(LoadError("nats publisher: the connection closed after \(sent) PUBs")))
    context.fireChannelInactive()
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    finish(.failure(error))
    context.close(promise: nil)
  }

  /// Writes the PUBs now due, up to 256 per burst while the channel is writable, then yields
  /// to the event loop (so reads are not starved) and continues.
  private func pump(context: ChannelHandlerContext) {
    guard !isFinished, !pingSent else { return }
    let now = ProcessStats.monotonicNanos()
    let allowed = min(plan.allowed(start: started, now: now), sent + 256)
    guard context.channel.isWritable, sent < allowed else { return }
    var buffer = context.channel.allocator.buffer(capacity: (allowed - sent) * (BenchCard.targetSize + 40))
    while sent < allowed {
      let (topic, card) = plan.target(of: sent)
      let bytes = BenchCard.card(cardID: BenchCard.cardID(card), stampNanos: plan.stamp(of: sent, start: started, now: now)).serializedBytes()
      buffer.writeString("PUB \(plan.topics[topic]) \(bytes.count)\r\n")
      buffer.writeBytes(bytes)
      buffer.writeStaticString("\r\n")
      sent += 1
    }
    if sent == plan.publishes {
      buffer.writeStaticString("PING\r\n")
      pingSent = true
      ticker?.cancel()
      ticker = nil
    }
    context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    if plan.rate == nil, !pingSent {
      let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
      context.eventLoop.execute {
        let (handler, context) = loopBound.value
        handler.pump(context: context)
      }
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
