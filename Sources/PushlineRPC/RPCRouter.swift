import PushlineSchema
public import PushlineWire

/// The methods a server serves, by name, each with its typed handler.
///
/// Handlers are written with async/await. A unary handler receives the decoded request and
/// returns the response; a request that does not decode ends the call with INVALID_ARGUMENT
/// naming the decoding error, an ``RPCError`` thrown by the handler ends it with that status,
/// and any other error with UNKNOWN.
public struct RPCRouter: Sendable {
  /// A handler over raw message bytes: the transport's view of every registered method. It
  /// throws only ``RPCError``s.
  public typealias Handler = @Sendable (_ request: [UInt8], _ context: ServerContext) async throws -> [UInt8]

  private var handlers: [String: Handler] = [:]

  /// A router serving nothing.
  public init() {}

  /// The methods served.
  public var methods: [String] { handlers.keys.sorted() }

  /// Serves `method` with a unary handler.
  public mutating func registerUnary<Request: WireMessage, Response: WireMessage>(
    _ method: String, request: Request.Type, response: Response.Type,
    handler: @escaping @Sendable (Request, ServerContext) async throws -> Response
  ) {
    handlers[method] = { bytes, context in
      let request: Request
      do {
        request = try Request(serializedBytes: bytes)
      } catch {
        throw RPCError(code: .invalidArgument, message: "\(Request.protoName): \(error)")
      }
      do {
        return try await handler(request, context).serializedBytes()
      } catch let error as RPCError {
        throw error
      } catch is CancellationError {
        throw RPCError(code: .cancelled, message: "the call was cancelled")
      } catch {
        throw RPCError(code: .unknown, message: "\(error)")
      }
    }
  }

  /// The handler of `method`, or `nil` when it is not served (UNIMPLEMENTED).
  public func handler(for method: String) -> Handler? { handlers[method] }
}
