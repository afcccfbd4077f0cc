import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// `broker-server --implementation nio`: the reference DESIGN.md measured before the first line
/// of Pushline — a bare SwiftNIO fan-out server speaking nats-server's core protocol (CONNECT,
/// SUB, PUB, PING/PONG in; MSG, PONG out), with no auth, storage, offsets, acknowledgements or
/// slow-consumer policy. The load generator drives it exactly as it drives nats-server, so one
/// run shows what SwiftNIO itself allows on this machine beside what both brokers reach: the
/// ceiling the targets were set from.
///
/// Its hot path is DESIGN.md's recipe: up to 16 reads per wake-up into buffers growing to
/// 256 KiB; a read burst's deliveries gathered in one buffer per subscriber; one job per other
/// event loop per burst; one flush per subscriber per burst.
enum BareFanOutServer {
  /// Serves on a free loopback port, prints `PORT p PID pid`, and exits when standard input
  /// closes.
  static func run() throws {
    let subjects = BareSubjects()
    let channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
      .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
      .serverChannelOption(.backlog, value: 256)
      .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
      .childChannelOption(.maxMessagesPerRead, value: 16)
      .childChannelOption(.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 256 << 10))
      .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
          try channel.pipeline.syncOperations.addHandler(BareConnectionHandler(subjects: subjects))
        }
      }
      .bind(host: "127.0.0.1", port: 0)
      .wait()
    FileHandle.standardOutput.write(Data("PORT \(channel.localAddress?.port ?? 0) PID \(getpid())\n".utf8))
    while readLine() != nil {}
    _exit(0)
  }
}

/// One SUB: the connection its deliveries go to, and the start of their MSG lines.
final class BareSubscriber: Sendable {
  let channel: any Channel
  let subject: String
  /// `MSG <subject> <sid> `, to which each delivery adds its size.
  let lineStart: [UInt8]

  init(channel: any Channel, subject: String, sid: Substring) {
    self.channel = channel
    self.subject = subject
    lineStart = Array("MSG \(subject) \(sid) ".utf8)
  }
}

/// Every connection's subscriptions by subject, shared by the event loops.
final class BareSubjects: Sendable {
  private let table = Mutex<[String: [BareSubscriber]]>([:])

  func add(_ subscriber: BareSubscriber) {
    table.withLock { $0[subscriber.subject, default: []].append(subscriber) }
  }

  func remove(_ subscriber: BareSubscriber) {
    table.withLock { $0[subscriber.subject]?.removeAll { $0 === subscriber } }
  }

  func subscribers(of subject: String) -> [BareSubscriber] {
    table.withLock { $0[subject] ?? [] }
  }
}

/// One connection: splits its reads into operations, registers its SUBs, and fans its PUBs out
/// — each read burst's deliveries gathered per subscriber and written at the burst's end.
final class BareConnectionHandler: ChannelInboundHandler {
  typealias InboundIn = ByteBuffer
  typealias OutboundOut = ByteBuffer

  private let subjects: BareSubjects
  private var unfinished = UnfinishedBytes()
  private var subscriptions: [BareSubscriber] = []
  /// This burst's deliveries: one buffer per subscriber, in the order first reached.
  private var burst: [(subscriber: BareSubscriber, bytes: ByteBuffer)] = []
  private var burstIndex: [ObjectIdentifier: Int] = [:]
  private var pongs = 0

  init(subjects: BareSubjects) {
    self.subjects = subjects
  }

  func channelRead(context: ChannelHandlerContext, data: NIOAny) {
    var bytes = unfinished.joined(unwrapInboundIn(data))
    while handleOperation(in: &bytes, context: context) {}
    unfinished.keep(&bytes, allocator: context.channel.allocator)
  }

  func channelReadComplete(context: ChannelHandlerContext) {
    var elsewhere: [ObjectIdentifier: (loop: any EventLoop, writes: [(BareSubscriber, ByteBuffer)])] = [:]
    for (subscriber, bytes) in burst {
      let loop = subscriber.channel.eventLoop
      if loop === context.eventLoop {
        subscriber.channel.writeAndFlush(bytes, promise: nil)
      } else {
        elsewhere[ObjectIdentifier(loop), default: (loop, [])].writes.append((subscriber, bytes))
      }
    }
    for (loop, writes) in elsewhere.values {
      loop.execute {
        for (subscriber, bytes) in writes { subscriber.channel.writeAndFlush(bytes, promise: nil) }
      }
    }
    burst.removeAll(keepingCapacity: true)
    burstIndex.removeAll(keepingCapacity: true)
    if pongs > 0 {
      var reply = context.channel.allocator.buffer(capacity: 6 * pongs)
      for _ in 0..<pongs { reply.writeStaticString("PONG\r\n") }
      pongs = 0
      context.writeAndFlush(wrapOutboundOut(reply), promise: nil)
    }
  }

  func channelInactive(context: ChannelHandlerContext) {
    for subscriber in subscriptions { subjects.remove(subscriber) }
    subscriptions = []
    context.fireChannelInactive()
  }

  func errorCaught(context: ChannelHandlerContext, error: any Error) {
    context.close(promise: nil)
  }

  /// Handles one operation and returns true, or returns false (reading nothing) when the
  /// bytes hold no whole one.
  private func handleOperation(in buffer: inout ByteBuffer, context: ChannelHandlerContext) -> Bool {
    let view = buffer.readableBytesView
    guard let newline = view.firstIndex(of: UInt8(ascii: "\n")) else { return false }
    let lineLength = newline - view.startIndex + 1
    var end = newline
    if end > view.startIndex, view[end - 1] == UInt8(ascii: "\r") { end -= 1 }
    let words = view[view.startIndex..<end].split(separator: UInt8(ascii: " "))
    guard let verb = words.first else {
      buffer.moveReaderIndex(forwardBy: lineLength)
      return true
    }
    switch verb.first {
    case UInt8(ascii: "P") where verb.count == 3:  // PUB <subject> [reply-to] <#bytes>
      guard words.count >= 3, let size = Int(String(decoding: words[words.count - 1], as: UTF8.self)) else {
        context.close(promise: nil)
        return false
      }
      guard buffer.readableBytes >= lineLength + size + 2 else { return false }
      let subject = String(decoding: words[1], as: UTF8.self)
      buffer.moveReaderIndex(forwardBy: lineLength)
      let payload = buffer.readSlice(length: size)!
      buffer.moveReaderIndex(forwardBy: 2)
      deliver(payload, to: subjects.subscribers(of: subject), context: context)
    case UInt8(ascii: "P") where verb.elementsEqual("PING".utf8):
      buffer.moveReaderIndex(forwardBy: lineLength)
      pongs += 1
    case UInt8(ascii: "S") where words.count >= 3:  // SUB <subject> [queue] <sid>
      let subscriber = BareSubscriber(
        channel: context.channel, subject: String(decoding: words[1], as: UTF8.self),
        sid: Substring(String(decoding: words[words.count - 1], as: UTF8.self)))
      subjects.add(subscriber)
      subscriptions.append(subscriber)
      buffer.moveReaderIndex(forwardBy: lineLength)
    default:  // CONNECT, PONG, UNSUB and the rest: nothing to do
      buffer.moveReaderIndex(forwardBy: lineLength)
    }
    return true
  }

  /// Adds a MSG of `payload` to each subscriber's buffer of this burst.
  private func deliver(_ payload: ByteBuffer, to subscribers: [BareSubscriber], context: ChannelHandlerContext) {
    for subscriber in subscribers {
      let id = ObjectIdentifier(subscriber)
      let index: Int
      if let known = burstIndex[id] {
        index = known
      } else {
        index = burst.count
        burstIndex[id] = index
        burst.append((subscriber, context.channel.allocator.buffer(capacity: 512)))
      }
      burst[index].bytes.writeBytes(subscriber.lineStart)
      burst[index].bytes.writeString(String(payload.readableBytes))
      burst[index].bytes.writeStaticString("\r\n")
      burst[index].bytes.writeImmutableBuffer(payload)
      burst[index].bytes.writeStaticString("\r\n")
    }
  }
}

@available(*, unavailable)
extension BareConnectionHandler: Sendable {}
