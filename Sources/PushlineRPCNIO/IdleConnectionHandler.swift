public import NIOCore
public import PushlineRPC
import PushlineSchema
import PushlineWire

/// Ends connections that have gone quiet, and keeps quiet healthy ones proving themselves.
///
/// - **Read timeout**: when nothing has been received for a whole period of `readTimeout`,
///   the handler sends GOAWAY UNAVAILABLE "idle" and closes — so a dead peer, or one that sent
///   half a frame and stopped, is gone after between one and two periods of silence. Servers use
///   it as their idle timeout; clients as the keepalive deadline that declares a server dead.
/// - **Ping interval**: when nothing has been sent for a whole period, it sends a PING, which
///   the peer answers (client keepalive).
///
/// It checks once a period on the event loop's own clock (so tests drive it with
/// `EmbeddedEventLoop.advanceTime`), rather than rescheduling a timer on every read.
public final class IdleConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
  public typealias InboundIn = ConnectionElement
  public typealias InboundOut = ConnectionElement
  public typealias OutboundIn = ConnectionElement
  public typealias OutboundOut = ConnectionElement

  private let readTimeout: TimeAmount?
  private let pingInterval: TimeAmount?
  private var readSinceCheck = false
  private var wroteSinceCheck = false
  private var readCheck: Scheduled<Void>?
  private var pingCheck: Scheduled<Void>?

  /// A handler with either or both behaviours.
  public init(readTimeout: TimeAmount? = nil, pingInterval: TimeAmount? = nil) {
    self.readTimeout = readTimeout
    self.pingInterval = pingInterval
  }

  public func handlerAdded(context: ChannelHandlerContext) {
    if context.channel.isActive { startChecks(context: context) }
  }

  public func channelActive(context: ChannelHandlerContext) {
    startChecks(context: context)
    context.fireChannelActive()
  }

  public func channelInactive(context: ChannelHandlerContext) {
    stopChecks()
    context.fireChannelInactive()
  }

  public func handlerRemoved(context: ChannelHandlerContext) {
    stopChecks()
  }

  public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    readSinceCheck = true
    context.fireChannelRead(data)
  }

  public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
    wroteSinceCheck = true
    context.write(data, promise: promise)
  }

  private func startChecks(context: ChannelHandlerContext) {
    guard readCheck == nil, pingCheck == nil else { return }
    let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
    if let readTimeout {
      readCheck = context.eventLoop.scheduleTask(in: readTimeout) { loopBound.value.0.checkReads(context: loopBound.value.1) }
    }
    if let pingInterval {
      pingCheck = context.eventLoop.scheduleTask(in: pingInterval) { loopBound.value.0.checkWrites(context: loopBound.value.1) }
    }
  }

  private func stopChecks() {
    readCheck?.cancel()
    pingCheck?.cancel()
    readCheck = nil
    pingCheck = nil
  }

  private func checkReads(context: ChannelHandlerContext) {
    guard let readTimeout, context.channel.isActive else { return }
    guard readSinceCheck else {
      stopChecks()
      var goAway = GoAway(lastCallID: 0)
      goAway.code = StatusCode.unavailable.rawValue
      goAway.message = "idle: nothing received for \(readTimeout.nanoseconds / 1_000_000_000) s"
      let channel = context.channel
      context.writeAndFlush(wrapOutboundOut(.frame(Frame(kind: .goAway, callID: 0, payload: goAway.serializedBytes()))))
        .whenComplete { _ in channel.close(promise: nil) }
      return
    }
    readSinceCheck = false
    let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
    readCheck = context.eventLoop.scheduleTask(in: readTimeout) { loopBound.value.0.checkReads(context: loopBound.value.1) }
  }

  private func checkWrites(context: ChannelHandlerContext) {
    guard let pingInterval, context.channel.isActive else { return }
    if !wroteSinceCheck {
      let payload = (0..<8).map { _ in UInt8.random(in: 0...255) }
      context.writeAndFlush(wrapOutboundOut(.frame(Frame(kind: .ping, callID: 0, payload: payload))), promise: nil)
    }
    wroteSinceCheck = false
    let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
    pingCheck = context.eventLoop.scheduleTask(in: pingInterval) { loopBound.value.0.checkWrites(context: loopBound.value.1) }
  }
}

@available(*, unavailable)
extension IdleConnectionHandler: Sendable {}
