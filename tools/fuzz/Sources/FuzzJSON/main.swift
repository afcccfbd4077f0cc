import PushlineSchema
import PushlineText

/// libFuzzer entry point: the first byte picks a message type, the rest is parsed as its
/// protobuf JSON. Parsing must never trap; a message that maps must print JSON that maps back
/// to the same JSON.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
  guard count > 0 else { return 0 }
  let types = MessageRegistry.all
  let type = types[Int(start.load(as: UInt8.self)) % types.count]
  let text = String(decoding: UnsafeRawBufferPointer(start: start + 1, count: count - 1), as: UTF8.self)
  guard let message = try? ProtoJSON.decode(type, from: text) else { return 0 }
  let printed = ProtoJSON.encode(message)
  guard let again = try? ProtoJSON.decode(type, from: printed), ProtoJSON.encode(again) == printed else {
    fatalError("\(type.protoName): JSON printed from a parsed message does not parse back the same")
  }
  return 0
}
