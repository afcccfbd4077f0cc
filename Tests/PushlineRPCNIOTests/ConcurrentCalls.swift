import PushlineRPCNIO
import PushlineSchema
import Testing

/// Makes `count` calls of `method` at once on `connection`, each with a key and value of its
/// own, and expects every answer to carry its call's key and its value uppercased: no answer
/// reaches another call.
func expectConcurrentUppercasingCalls(_ method: String, count: Int = 64, on connection: RPCConnection) async throws {
  try await withThrowingTaskGroup(of: Void.self) { group in
    for index in 0..<count {
      group.addTask {
        var request = MetadataEntry(key: "\(index)")
        request.value = "v\(index)"
        let response = try await connection.unary(method, request: request, response: MetadataEntry.self)
        #expect(response.key == "\(index)" && response.value == "V\(index)")
      }
    }
    try await group.waitForAll()
  }
}
