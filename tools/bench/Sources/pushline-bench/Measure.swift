import AllocationCounter

/// Times operations: median nanoseconds per operation over several samples of enough
/// iterations to take about 20 ms each, and heap allocations per operation.
struct Measure {
  var samples = 15
  var sampleDuration = Duration.milliseconds(20)

  struct Result {
    var nanosecondsPerOperation: Double
    var allocationsPerOperation: Double
  }

  /// Measures several operations with their samples interleaved (A, B, C, A, B, C, …), so
  /// that load from other processes on a shared machine falls on all of them alike.
  func callAsFunction(_ operations: [() -> Int]) -> [Result] {
    let clock = ContinuousClock()
    let iterations = operations.map { operation in
      var count = 1
      while clock.measure({ run(operation, count) }) < sampleDuration / 4 { count *= 2 }
      return count * 4
    }
    var perOperation = [[Double]](repeating: [], count: operations.count)
    for _ in 0..<samples {
      for (index, operation) in operations.enumerated() {
        let (seconds, attoseconds) = clock.measure { run(operation, iterations[index]) }.components
        perOperation[index].append((Double(seconds) * 1e9 + Double(attoseconds) / 1e9) / Double(iterations[index]))
      }
    }
    return operations.indices.map { index in
      let before = allocation_count()
      run(operations[index], iterations[index])
      let allocations = Double(allocation_count() - before) / Double(iterations[index])
      return Result(nanosecondsPerOperation: perOperation[index].sorted()[samples / 2], allocationsPerOperation: allocations)
    }
  }

  @inline(never)
  private func run(_ operation: () -> Int, _ iterations: Int) {
    var sink = 0
    for _ in 0..<iterations { sink &+= operation() }
    blackHole(sink)
  }
}

@inline(never)
func blackHole(_ value: Int) {
  if value == 0x5EED_5EED { print("") }
}
