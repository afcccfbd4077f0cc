public import PushlineWire

/// The methods a server serves, by name, each with its typed handler.
///
/// Handlers are written with async/await, each call in a task of its own; a unary method that
/// answers from a callback (it hands the request to something that completes it later, such
/// as the broker's group commit) can instead be registered as *completing*: it runs on the
/// transport's executor without a task and answers through a ``UnaryCompletion``, which
/// saves the task and its switches on a hot path. A *pipelined* method is many such exchanges on
/// one call: the client streams requests, each answered by one response, in request order —
/// a publisher's stream of publishes, with no call to open and end for each. A request that
/// does not decode ends the call with INVALID_ARGUMENT naming the decoding error; an
/// ``RPCError`` thrown by the handler ends it with that status; cancellation with CANCELLED;
/// any other error with UNKNOWN.
public struct RPCRouter: Sendable {
  /// How a handler's responses reach the transport.
  public struct ResponseSink: Sendable {
    /// Sends one response message of a call. It returns once the transport has taken the
    /// message — at once while the connection can take more bytes, later when its outbound
    /// buffer is full — so a handler that streams cannot outrun a slow client; it throws
    /// CANCELLED once the call is over.
    public var send: @Sendable (_ message: [UInt8]) async throws -> Void
    /// Hands the call's responses to a ``ResponseSource`` that the transport pulls from, and
    /// returns the pump that wakes it; `nil` when the transport has no such path.
    public var pump: (@Sendable (any ResponseSource) -> any ResponsePump)?

    /// A sink; transports create these.
    public init(
      send: @escaping @Sendable (_ message: [UInt8]) async throws -> Void,
      pump: (@Sendable (any ResponseSource) -> any ResponsePump)? = nil
    ) {
      self.send = send
      self.pump = pump
    }
  }

  /// A method's handler over raw bytes: the transport's view of every registered method. It
  /// throws only ``RPCError``s.
  public typealias Handler = @Sendable (_ request: ArraySlice<UInt8>, _ respond: ResponseSink, _ context: ServerContext) async throws
    -> Void

  /// A unary (or pipelined) method's handler over raw bytes that answers through `answer`
  /// instead of returning: called on the transport's executor (for a pipelined method, once per
  /// request, in order), it must not block; it may answer at once or later, from any thread.
  /// Only the first answer to a request counts.
  public typealias CompletingHandler = @Sendable (_ request: ArraySlice<UInt8>, _ context: ServerContext, _ answer: CallAnswer) -> Void

  /// How many response messages a method sends.
  public enum Kind: Sendable {
    /// Exactly one.
    case unary
    /// Any number, then the status.
    case serverStreaming
    /// One per request, in request order; the client sends any number of requests, and the
    /// status follows the answer to the last once the client has half-closed.
    case pipelined
  }

  /// How the transport runs a method's calls.
  public enum Implementation: Sendable {
    /// In a task of its own, with async/await.
    case task(Handler)
    /// Unary, on the transport's executor, answering through a callback.
    case completing(CompletingHandler)
    /// Pipelined: each request on the transport's executor, answered through a callback.
    case pipelined(CompletingHandler)
  }

  private var registered: [String: (kind: Kind, implementation: Implementation)] = [:]
  /// The methods whose calls take a stream of requests: a connection's state machine must
  /// accept more than one request on their calls (see
  /// ``ServerConnectionStateMachine/Configuration/pipelinedMethods``). Kept as registered, so
  /// that every connection shares the one set.
  public private(set) var pipelinedMethods: Set<String> = []

  /// A router serving nothing.
  public init() {}

  /// The methods served.
  public var methods: [String] { registered.keys.sorted() }

  /// Serves `method` with a unary handler: one request, one response.
  @inlinable  // Specialised in the registering module: the request decodes without generic dispatch.
  public mutating func registerUnary<Request: WireMessage, Response: WireMessage>(
    _ method: String, request: Request.Type, response: Response.Type,
    handler: @escaping @Sendable (Request, ServerContext) async throws -> Response
  ) {
    register(method, .unary, .task({ bytes, respond, context in
      let request = try Self.decode(Request.self, bytes)
      let response = try await Self.mappingErrors { try await handler(request, context) }
      try await respond.send(response.serializedBytes())
    }))
  }

  /// Serves `method` with a unary handler that runs on the transport's executor, without a
  /// task, and answers through its ``UnaryCompletion`` — at once or later, from any thread.
  /// For handlers that hand the request on and are completed by a callback; the handler
  /// itself must not block.
  @inlinable  // Specialised in the registering module: no generic dispatch per call.
  public mutating func registerUnary<Request: WireMessage, Response: WireMessage>(
    _ method: String, request: Request.Type, response: Response.Type,
    completing handler: @escaping @Sendable (Request, ServerContext, UnaryCompletion<Response>) -> Void
  ) {
    register(method, .unary, .completing(Self.completing(Request.self, handler)))
  }

  /// Serves `method` as a pipeline of unary exchanges on one call: the client streams
  /// requests, and `handler` — run on the transport's executor, without a task, once per
  /// request in arrival order — answers each through its ``UnaryCompletion``, at once or
  /// later, from any thread. The transport sends the answers in request order, whatever order
  /// they come in. An answer that fails (or a request that does not decode) ends the call with
  /// its status once the requests before it are answered; the requests after it get no
  /// answer. So a handler answers a request it refuses but can go on from with a response
  /// saying so. The call ends with OK once the client has half-closed and every request is
  /// answered; at the server's shutdown, with UNAVAILABLE once the requests it took are.
  @inlinable  // Specialised in the registering module: no generic dispatch per request.
  public mutating func registerPipelined<Request: WireMessage, Response: WireMessage>(
    _ method: String, request: Request.Type, response: Response.Type,
    completing handler: @escaping @Sendable (Request, ServerContext, UnaryCompletion<Response>) -> Void
  ) {
    register(method, .pipelined, .pipelined(Self.completing(Request.self, handler)))
  }

  /// Serves `method` with a server-streaming handler: one request, any number of responses
  /// written through the ``ResponseWriter``, then the status (OK when the handler returns).
  public mutating func registerServerStreaming<Request: WireMessage, Response: WireMessage>(
    _ method: String, request: Request.Type, response: Response.Type,
    handler: @escaping @Sendable (Request, ResponseWriter<Response>, ServerContext) async throws -> Void
  ) {
    register(method, .serverStreaming, .task({ bytes, respond, context in
      let request = try Self.decode(Request.self, bytes)
      try await Self.mappingErrors { try await handler(request, ResponseWriter(sink: respond), context) }
    }))
  }

  /// Serves `method` as `kind`, run by `implementation`, in place of what served it before.
  @usableFromInline mutating func register(_ method: String, _ kind: Kind, _ implementation: Implementation) {
    registered[method] = (kind, implementation)
    if kind == .pipelined {
      pipelinedMethods.insert(method)
    } else {
      pipelinedMethods.remove(method)
    }
  }

  /// The handler of `method`, its kind and how it runs, or `nil` when it is not served
  /// (UNIMPLEMENTED).
  public func handler(for method: String) -> (kind: Kind, implementation: Implementation)? { registered[method] }

  /// `handler` over raw bytes: a request that does not decode is answered with
  /// INVALID_ARGUMENT.
  @inlinable
  static func completing<Request: WireMessage, Response: WireMessage>(
    _: Request.Type, _ handler: @escaping @Sendable (Request, ServerContext, UnaryCompletion<Response>) -> Void
  ) -> CompletingHandler {
    { bytes, context, answer in
      let request: Request
      do throws(RPCError) {
        request = try Self.decode(Request.self, bytes)
      } catch {
        return answer.send(.failure(error))
      }
      handler(request, context, UnaryCompletion(answer: answer))
    }
  }

  @inlinable
  static func decode<Request: WireMessage>(_: Request.Type, _ bytes: ArraySlice<UInt8>) throws(RPCError) -> Request {
    do {
      return try Request(serializedBytes: bytes)
    } catch {
      throw RPCError(code: .invalidArgument, message: "\(Request.protoName): \(error)")
    }
  }

  @inlinable
  static func mappingErrors<Result>(_ body: () async throws -> Result) async throws -> Result {
    do {
      return try await body()
    } catch let error as RPCError {
      throw error
    } catch is CancellationError {
      throw RPCError(code: .cancelled, message: "the call was cancelled")
    } catch {
      throw RPCError(code: .unknown, message: "\(error)")
    }
  }
}
