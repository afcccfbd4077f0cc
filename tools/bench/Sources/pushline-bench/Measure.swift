/// Times operations: the median nanoseconds per operation over several samples, each of
/// enough iterations to take about `sampleDuration`, with the operations' samples interleaved.
struct Measure {
  var samples = 15
  var sampleDuration = Duration.milliseconds(20)

  /// The median nanoseconds per operation of each of `operations`, whose samples are
  /// interleaved (A, B, C, A, B, C, …) so that load from other processes on a shared machine
  /// falls on all of them alike. Each operation returns a value derived from its result, which
  /// is summed and kept, so the optimizer cannot drop the work.
  func callAsFunction(_ operations: [() -> Int]) -> [Double] {
    let clock = ContinuousClock()
    // Calibrate: double the iterations until a run takes a quarter of a sample, then take 4×.
    let iterations = operations.map { operation in
      var count = 1
      while clock.measure({ Self.run(operation, count) }) < sampleDuration / 4 { count *= 2 }
      return count * 4
    }
    var perOperation = [[Double]](repeating: [], count: operations.count)
    for _ in 0..<samples {
      for (index, operation) in operations.enumerated() {
        let elapsed = clock.measure { Self.run(operation, iterations[index]) }
        perOperation[index].append(elapsed.nanoseconds / Double(iterations[index]))
      }
    }
    return perOperation.map { $0.sorted()[samples / 2] }
  }

  struct Result {
    var nanosecondsPerOperation: Double
    /// `nil` when allocations could not be counted.
    var allocationsPerOperation: Double?
  }

  /// Runs `operation` `iterations` times, keeping the sum of its results.
  @inline(never)
  static func run(_ operation: () -> Int, _ iterations: Int) {
    var sink = 0
    for _ in 0..<iterations { sink &+= operation() }
    blackHole(sink)
  }
}

extension Duration {
  var nanoseconds: Double {
    let (seconds, attoseconds) = components
    return Double(seconds) * 1e9 + Double(attoseconds) / 1e9
  }
}

/// Keeps `value` alive as far as the optimizer can tell.
@inline(never)
func blackHole(_ value: Int) {
  if value == 0x5EED_5EED { print("") }
}

/// Keeps `pointer` alive as far as the optimizer can tell.
@inline(never)
func blackHole(_ pointer: UnsafeMutableRawPointer?) {
  if Int(bitPattern: pointer) == 0x5EED_5EED { print("") }
}
