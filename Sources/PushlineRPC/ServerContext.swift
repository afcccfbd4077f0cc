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

  /// A context; transports create these.
  public init(peer: ServerConnectionStateMachine.Peer, start: CallStart) {
    self.peer = peer
    method = start.method
    metadata = start.metadata
    timeout = start.timeoutMillis.map { .milliseconds($0) }
  }
}
