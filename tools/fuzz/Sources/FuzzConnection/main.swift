import PushlineRPCTesting

/// libFuzzer entry point for the connection state machines: `ConnectionScript` runs the input
/// as a script for the server's machine or the client's; a trap, or a rule it reports broken,
/// is a crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConnection(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
  if let broken = ConnectionScript.run(UnsafeRawBufferPointer(start: start, count: count)) { fatalError(broken) }
  return 0
}
