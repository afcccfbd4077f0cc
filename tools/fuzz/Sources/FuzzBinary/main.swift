import PushlineSchema
import PushlineText
import PushlineWire

/// libFuzzer entry point: the first byte picks a message type, the rest is decoded as it.
/// A decode must never trap; a message that decodes must re-encode to bytes that decode to
/// the same bytes again, and must render as text and JSON.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBinary(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
  guard count > 0 else { return 0 }
  let types = MessageRegistry.all
  let type = types[Int(start.load(as: UInt8.self)) % types.count]
  let bytes = UnsafeRawBufferPointer(start: start + 1, count: count - 1)
  guard let message = try? type.init(serializedBytes: bytes, options: DecodingOptions()) else { return 0 }
  let encoded = message.serializedBytes()
  guard let again = try? type.init(serializedBytes: encoded, options: DecodingOptions()),
    again.serializedBytes() == encoded
  else {
    fatalError("\(type.protoName): re-encoding a decoded message is not stable")
  }
  _ = TextDump.render(message)
  _ = ProtoJSON.encode(message)
  return 0
}
