public import PushlineSchema

/// What a handler knows about its call: the client's connection (its handshake, including the
/// auth token) and the call's own method, metadata and deadline.
public struct ServerContext: Sendable {
  /// The client as its handshake described it.
  public var peer: ServerConnectionStateMachine.Peer
  /// The method called, for example `/pushline.Health/Check`.
  public var method: String
  /// The call's metadata.
  public var metadata: [MetadataEntry]
  /// The client's deadline as a timeout from the call's start, if it set one.
  public var timeout: Duration?
  /// Where the call's connection runs (its event loop, in the NIO transport), for work a
  /// handler starts on the call's behalf: a task that prefers it runs after the requests read
  /// with this one and without a thread hop. `nil` when the transport offers none.
  public var executor: (any TaskExecutor)?

  /// A context; transports create these.
  public init(peer: ServerConnectionStateMachine.Peer, start: CallStart, executor: (any TaskExecutor)? = nil) {
    self.peer = peer
    method = start.method
    metadata = start.metadata
    timeout = start.timeoutMillis.map { .milliseconds($0) }
    self.executor = executor
  }
}
