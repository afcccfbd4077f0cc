public import NIOCore
public import PushlineRPC
import PushlineSchema
import PushlineWire

/// Ends connections that have gone quiet, and keeps quiet healthy ones proving themselves.
///
/// - **Read timeout**: when nothing has been received for a whole period of `readTimeout`,
///   the handler sends GOAWAY UNAVAILABLE "idle" (naming the highest call the peer started as
///   the last served) and closes — so a dead peer, or one that sent
///   half a frame and stopped, is gone after between one and two periods of silence (and two
///   seconds more at most, for a peer that does not read the GOAWAY). Servers use
///   it as their idle timeout; clients as the keepalive deadline that declares a server dead.
/// - **Ping interval**: when nothing has been sent for `pingInterval`, it sends a PING, which
///   the peer answers (client keepalive). It looks every half interval and pings when nothing
///   was written since it last looked, so a quiet connection's first PING goes out at most one
///   interval after its last write, and the next ones one interval apart: the peer never waits
///   longer than an interval to hear from it. A `PeerKeepaliveInterval` event brings the
///   interval within the peer's announced one and half of it while the connection runs (the
///   client keeps to the server's).
///
/// It checks on the event loop's own clock (so tests drive it with
/// `EmbeddedEventLoop.advanceTime`), rather than rescheduling a timer on every read or write:
/// each costs setting a flag. Its timers are scheduled callbacks, not tasks: no promise,
/// future or closure per check, which an idle connection would otherwise hold all its life
/// (about 170 bytes).
public final class IdleConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
  public typealias InboundIn = ConnectionElement
  public typealias InboundOut = ConnectionElement
  public typealias OutboundIn = ConnectionElement
  public typealias OutboundOut = ConnectionElement

  private var readTimeout: TimeAmount?
  private var pingInterval: TimeAmount?
  private var readSinceCheck = false
  /// Set while a handler above holds the channel's reads back (``ReadsHeld``): silence then is
  /// this side's doing, not the peer's.
  private var readsHeld = false
  private var wroteSinceCheck = false
  /// The highest call the peer started (a server's handler sees its client's CALL_STARTs; a
  /// client's, none): what the idle GOAWAY names as the last call served, so that the client
  /// does not take calls the server ran for calls it never served, and retry them.
  private var highestCallStarted: UInt32 = 0
  private var readCheck: NIOScheduledCallback?
  private var pingCheck: NIOScheduledCallback?
  private var context: ChannelHandlerContext?

  /// A handler with either or both behaviours.
  public init(readTimeout: TimeAmount? = nil, pingInterval: TimeAmount? = nil) {
    self.readTimeout = readTimeout
    self.pingInterval = pingInterval
  }

  public func handlerAdded(context: ChannelHandlerContext) {
    self.context = context
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
    self.context = nil
  }

  public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    readSinceCheck = true
    if case .frame(let frame) = unwrapInboundIn(data), frame.kind == .callStart {
      highestCallStarted = max(highestCallStarted, frame.callID)
    }
    context.fireChannelRead(data)
  }

  public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
    wroteSinceCheck = true
    context.write(data, promise: promise)
  }

  public func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
    if let held = event as? ReadsHeld {
      readsHeld = held.isHeld
      promise?.succeed(())
      return
    }
    guard let announced = event as? PeerKeepaliveInterval else {
      return context.triggerUserOutboundEvent(event, promise: promise)
    }
    keepToPeer(announced.interval, context: context)
    promise?.succeed(())
  }

  private func startChecks(context: ChannelHandlerContext) {
    guard readCheck == nil, pingCheck == nil else { return }
    if let readTimeout { readCheck = schedule(.reads, in: readTimeout, on: context.eventLoop) }
    if let pingInterval { pingCheck = schedule(.writes, in: Self.writeCheckPeriod(pingInterval), on: context.eventLoop) }
  }

  /// How often writes are checked: every half ping interval (see the type's comment), and no
  /// more than once a millisecond, so that an interval of zero does not spin the event loop.
  private static func writeCheckPeriod(_ pingInterval: TimeAmount) -> TimeAmount {
    .nanoseconds(max(pingInterval.nanoseconds / 2, 1_000_000))
  }

  /// Pings at most `announced` apart, and at least half of it: the peer counts PINGs closer
  /// than that against its ping budget, and a quiet connection pinging so often is cut off. A
  /// handler that does not ping, or whose interval lies between the two, is unchanged. A new
  /// interval counts from now: the next check is half of it away, and pings unless something
  /// is written before it. A read timeout shorter than two intervals grows to two from its
  /// next check, so that a quiet peer's PONG always arrives within it.
  private func keepToPeer(_ announced: TimeAmount, context: ChannelHandlerContext) {
    guard let pingInterval else { return }
    let interval = min(max(pingInterval, TimeAmount.nanoseconds(announced.nanoseconds / 2)), announced)
    if let readTimeout, readTimeout < interval * 2 { self.readTimeout = interval * 2 }
    guard interval != pingInterval else { return }
    self.pingInterval = interval
    guard let pending = pingCheck else { return }  // not started yet, or stopped for good
    pending.cancel()
    wroteSinceCheck = false
    pingCheck = schedule(.writes, in: Self.writeCheckPeriod(interval), on: context.eventLoop)
  }

  private func stopChecks() {
    readCheck?.cancel()
    pingCheck?.cancel()
    readCheck = nil
    pingCheck = nil
  }

  /// Schedules the next check of `kind`; `nil` once the loop is shutting down (and the channel
  /// with it).
  private func schedule(_ kind: Check.Kind, in delay: TimeAmount, on eventLoop: any EventLoop) -> NIOScheduledCallback? {
    try? eventLoop.assumeIsolated().scheduleCallback(in: delay, handler: Check(handler: self, kind: kind))
  }

  /// A timer's callback: the handler and which check is due.
  private struct Check: NIOScheduledCallbackHandler {
    enum Kind { case reads, writes }
    let handler: IdleConnectionHandler
    let kind: Kind

    func handleScheduledCallback(eventLoop: some EventLoop) {
      guard let context = handler.context else { return }
      switch kind {
      case .reads: handler.checkReads(context: context)
      case .writes: handler.checkWrites(context: context)
      }
    }
  }

  private func checkReads(context: ChannelHandlerContext) {
    guard let readTimeout, context.channel.isActive else { return }
    guard readSinceCheck || readsHeld else {
      stopChecks()
      var goAway = GoAway(lastCallID: highestCallStarted)
      goAway.code = StatusCode.unavailable.rawValue
      goAway.message = "idle: nothing received for \(readTimeout.nanoseconds / 1_000_000_000) s"
      let channel = context.channel
      // A peer that reads nothing does not keep the connection: it closes without the GOAWAY.
      let stalled = context.eventLoop.scheduleTask(in: FlushCoalescer.lingering) { channel.close(promise: nil) }
      context.writeAndFlush(wrapOutboundOut(.frame(Frame(kind: .goAway, callID: 0, payload: goAway.serializedBytes()))))
        .whenComplete { _ in
          stalled.cancel()
          channel.close(promise: nil)
        }
      return
    }
    readSinceCheck = false
    readCheck = schedule(.reads, in: readTimeout, on: context.eventLoop)
  }

  private func checkWrites(context: ChannelHandlerContext) {
    guard let pingInterval, context.channel.isActive else { return }
    if wroteSinceCheck {
      wroteSinceCheck = false
    } else {
      let payload = (0..<8).map { _ in UInt8.random(in: 0...255) }
      context.writeAndFlush(wrapOutboundOut(.frame(Frame(kind: .ping, callID: 0, payload: payload))), promise: nil)
      wroteSinceCheck = true  // The PING is a write: the next one goes out one interval later.
    }
    pingCheck = schedule(.writes, in: Self.writeCheckPeriod(pingInterval), on: context.eventLoop)
  }
}

extension IdleConnectionHandler {
  /// An outbound user event: the peer expects to hear from this side at least every
  /// `interval`, and counts PINGs less than half of it apart against its ping budget. A
  /// pinging handler keeps its own interval when it lies between the two, and the nearer
  /// bound otherwise; a handler that does not ping ignores it.
  struct PeerKeepaliveInterval: Sendable {
    var interval: TimeAmount
  }

  /// An outbound user event: a handler above holds the channel's reads back (a stream's
  /// consumer is behind), or lets them go again. While they are held, nothing received is no
  /// sign of a dead peer: the read timeout does not end the connection.
  struct ReadsHeld: Sendable {
    var isHeld: Bool
  }
}

@available(*, unavailable)
extension IdleConnectionHandler: Sendable {}
