import PushlineRPC
public import PushlineWire

/// The responses of a server-streaming call, decoded as they arrive.
///
/// Ends when the call ends with OK; throws ``RPCError`` with the call's status otherwise, or
/// INTERNAL for a response that does not decode.
public struct RPCResponseStream<Response: WireMessage>: AsyncSequence, Sendable {
  public typealias Element = Response

  let raw: AsyncThrowingStream<[UInt8], any Error>

  public struct AsyncIterator: AsyncIteratorProtocol {
    var raw: AsyncThrowingStream<[UInt8], any Error>.AsyncIterator

    public mutating func next() async throws -> Response? {
      guard let bytes = try await raw.next() else { return nil }
      do {
        return try Response(serializedBytes: bytes)
      } catch {
        throw RPCError(code: .internal, message: "a response does not decode: \(Response.protoName): \(error)")
      }
    }
  }

  public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(raw: raw.makeAsyncIterator()) }
}
