#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif
import MallocInterposerSwift

/// Counts heap allocations with ordo-one/malloc-interposer: every `malloc`, `calloc`,
/// `realloc`, `posix_memalign`, `aligned_alloc`, `memalign` and `valloc` of the process,
/// whoever calls it (Swift's runtime, libprotobuf-c, the C library itself).
///
/// The interposer counts only when its `malloc` is the one the process resolves. On Linux
/// linking it is enough: the executable lists `libMallocInterposerSwift.so` before
/// `libc.so.6`, so its definitions come first. Elsewhere, or if that changes, the library has
/// to be preloaded (`LD_PRELOAD`, `DYLD_INSERT_LIBRARIES`): ``preloadIfNeeded()`` re-executes
/// the benchmark that way.
///
/// Counting is not free even while disabled (about 5 ns per malloc/free pair here, and a
/// 16-byte header on every block), which would weigh on the implementation that allocates
/// most. So the benchmark counts in one process and times in another: ``execForTiming(passing:)``
/// re-executes it with the C library's allocator resolved first (`LD_PRELOAD=libc.so.6`), the
/// counts passed along in the environment. The `rpc` benchmark, which counts nothing, runs
/// without the interposer too (``execWithoutInterposer()``).
enum AllocationCounter {
  /// Whether the interposer sees this process's allocations: one probe allocation is counted.
  static let isActive: Bool = {
    MallocInterposerSwift.initialize()
    MallocInterposerSwift.hook()
    let pointer = malloc(opaque(24))
    blackHole(pointer)
    free(pointer)
    MallocInterposerSwift.unhook()
    let counted = MallocInterposerSwift.getStatistics().mallocCount
    MallocInterposerSwift.reset()
    return counted > 0
  }()

  /// Allocations per call of `body(1)`, measured over `body(iterations)` after one uncounted
  /// warm-up call (so one-time lazy initialization is not counted); `nil` when counting is
  /// unavailable.
  static func allocationsPerOperation(iterations: Int, _ body: (Int) -> Void) -> Double? {
    guard isActive else { return nil }
    body(1)
    MallocInterposerSwift.reset()
    MallocInterposerSwift.hook()
    body(iterations)
    MallocInterposerSwift.unhook()
    return Double(MallocInterposerSwift.getStatistics().mallocCount) / Double(iterations)
  }

  /// Starts counting every allocation from now on, for the rest of the process's life (after
  /// re-executing with the interposer preloaded if needed, as a child of a process that runs
  /// without it); returns whether counting is available.
  static func startCountingForLife() -> Bool {
    preloadIfNeeded()
    guard isActive else { return false }
    MallocInterposerSwift.reset()
    MallocInterposerSwift.hook()
    return true
  }

  /// The allocations counted since ``startCountingForLife()``.
  static var countedForLife: Int {
    Int(MallocInterposerSwift.getStatistics().mallocCount)
  }

  // MARK: Processes

  private static let preloadAttempted = "PUSHLINE_BENCH_INTERPOSER_PRELOADED"
  private static let countsVariable = "PUSHLINE_BENCH_MALLOCS_PER_OP"
  private static let withoutInterposer = "PUSHLINE_BENCH_WITHOUT_INTERPOSER"

  #if canImport(Darwin)
    private static let preloadVariable = "DYLD_INSERT_LIBRARIES"
    private static let libraryName = "libMallocInterposerSwift.dylib"
    private static let separators: Set<Character> = [":"]
  #else
    private static let preloadVariable = "LD_PRELOAD"
    private static let libraryName = "libMallocInterposerSwift.so"
    private static let separators: Set<Character> = [":", " "]
  #endif

  /// If allocations cannot be counted, re-executes this process with the interposer's library
  /// preloaded (once: the environment marks the attempt). Returns when counting works, or
  /// cannot be made to work; ``manualCommand`` then says how to preload by hand.
  static func preloadIfNeeded() {
    guard !isActive, getenv(preloadAttempted) == nil, let library = libraryPath else { return }
    setenv(preloadAttempted, "1", 1)
    setPreloads([library] + preloads)
    exec()
    unsetenv(preloadAttempted)
  }

  /// The counts a counting process passed to this one, if this is the timing process.
  static func countsFromCountingProcess() -> [Double?]? {
    guard let value = getenv(countsVariable).map({ String(cString: $0) }) else { return nil }
    unsetenv(countsVariable)
    return value.split(separator: ",").map { Double($0) }
  }

  /// Re-executes this process for timing, without the interposer (``execWithoutInterposer()``)
  /// and with `counts` (one per operation, `nil` when unavailable) in the environment.
  /// Returns only if that fails.
  static func execForTiming(passing counts: [Double?]) {
    setenv(countsVariable, counts.map { $0.map { String($0) } ?? "-" }.joined(separator: ","), 1)
    execWithoutInterposer()
    unsetenv(countsVariable)
  }

  /// If the interposer's allocator is active, re-executes this process without it: its library
  /// no longer preloaded, and on Linux the C library's allocator resolved first
  /// (`LD_PRELOAD=libc.so.6`). Child processes inherit that environment. Returns when the
  /// interposer is inactive, or if re-executing fails or did not help.
  static func execWithoutInterposer() {
    guard isActive, getenv(withoutInterposer) == nil else { return }
    setenv(withoutInterposer, "1", 1)
    let others = preloads.filter { !$0.hasSuffix("/" + libraryName) && $0 != libraryName }
    #if os(Linux)
      setPreloads(["libc.so.6"] + others.filter { $0 != "libc.so.6" })
    #else
      setPreloads(others)
    #endif
    exec()
  }

  /// How to run the benchmark with the interposer preloaded, for when counting fails.
  static var manualCommand: String {
    let executable = executablePath ?? "tools/bench/.build/release/pushline-bench"
    let library = libraryPath ?? "tools/bench/.build/release/\(libraryName)"
    return "\(preloadVariable)=\(library) \(executable) codec"
  }

  /// The library to preload: SwiftPM builds it next to the executable.
  private static var libraryPath: String? {
    guard let executable = executablePath, let slash = executable.lastIndex(of: "/") else { return nil }
    let library = String(executable[...slash]) + libraryName
    return access(library, R_OK) == 0 ? library : nil
  }

  private static var preloads: [String] {
    guard let value = getenv(preloadVariable) else { return [] }
    return String(cString: value).split(whereSeparator: separators.contains).map(String.init)
  }

  private static func setPreloads(_ libraries: [String]) {
    if libraries.isEmpty {
      unsetenv(preloadVariable)
    } else {
      setenv(preloadVariable, libraries.joined(separator: ":"), 1)
    }
  }

  /// Replaces this process with a fresh run of the same executable and arguments.
  private static func exec() {
    guard let executable = executablePath else { return }
    fflush(nil)  // flush every output stream before the image is replaced
    execv(executable, CommandLine.unsafeArgv)
  }

  private static var executablePath: String? {
    #if os(Linux)
      var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
      let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
      guard length > 0 else { return nil }
      return String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    #else
      return CommandLine.arguments.first
    #endif
  }

  @inline(never)
  private static func opaque(_ value: Int) -> Int { value }
}
