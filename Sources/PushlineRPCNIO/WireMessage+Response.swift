public import PushlineRPC
public import PushlineWire

extension WireMessage {
  /// A response decoded from `bytes`, or INTERNAL naming why it does not decode: a client
  /// cannot act on a response it cannot read, and the status says so the same way for every
  /// kind of call.
  @inlinable  // Specialised where the response type is known.
  static func decodingResponse(_ bytes: [UInt8]) throws(RPCError) -> Self {
    do {
      return try Self(serializedBytes: bytes)
    } catch {
      throw RPCError(code: .internal, message: "a response does not decode: \(protoName): \(error)")
    }
  }
}
