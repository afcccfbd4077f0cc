import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// What the broker benchmark reads about processes: resident memory and CPU time from `/proc`,
/// the shared monotonic clock, the file-descriptor limit, and the watch that ends a child
/// whose parent has gone.
enum ProcessStats {
  /// Resident memory of process `pid` in KiB (`VmRSS` in `/proc/PID/status`); 0 if unreadable.
  static func residentKiB(_ pid: Int32) -> Int {
    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
  }

  /// CPU time (user + system) process `pid` has used, in seconds, from `/proc/PID/stat`.
  static func cpuSeconds(_ pid: Int32) -> Double {
    let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
    // Fields after the command name, which is in parentheses: utime and stime are 14th and 15th overall.
    guard let close = stat.lastIndex(of: ")") else { return 0 }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
  }

  /// CPU seconds per kind of thread of process `pid`: thread names (`/proc/PID/task/TID/comm`)
  /// with digits and `#` dropped, so NIO's event loops, Swift's cooperative pool, SQLite's
  /// writer and Go's runtime threads each add up to one figure.
  static func threadCPUSeconds(_ pid: Int32) -> [String: Double] {
    var result: [String: Double] = [:]
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    for task in tasks {
      let comm = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8)) ?? "?"
      let name = String(comm.filter { !$0.isNumber && $0 != "#" && $0 != "\n" }).trimmingCharacters(in: CharacterSet(charactersIn: "-_ "))
      let stat = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8)) ?? ""
      guard let close = stat.lastIndex(of: ")") else { continue }
      let fields = stat[stat.index(after: close)...].split(separator: " ")
      guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { continue }
      let kind =
        if name.contains("default-qos") { "Swift-tasks(dispatch-pool)" }
        else if name.contains("overcommit") { "dispatch-overcommit" }
        else if name.hasPrefix("NIO") { "NIO-event-loops" }
        else { name.isEmpty ? "?" : name }
      result[kind, default: 0] += (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
    return result
  }

  /// CLOCK_MONOTONIC in nanoseconds: one clock for every process on the machine, so a
  /// timestamp written by one process can be compared with another's reading.
  @inline(__always)
  static func monotonicNanos() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
  }

  /// Raises the soft limit on open files to the hard limit (children inherit it); returns the
  /// new soft limit.
  @discardableResult
  static func raiseFileLimit() -> Int {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
    if limit.rlim_cur < limit.rlim_max {
      limit.rlim_cur = limit.rlim_max
      _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
      _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
    return Int(limit.rlim_cur)
  }

  /// Starts a thread that runs `cleanup` and exits the process as soon as the parent process
  /// is gone (a benchmark killed with SIGKILL must not leave brokers behind).
  static func exitWhenOrphaned(cleanup: @escaping @Sendable () -> Void = {}) {
    let parent = getppid()
    Thread.detachNewThread {
      while getppid() == parent { usleep(200_000) }
      cleanup()
      _exit(3)
    }
  }

  /// CPU time this process has used (user + system), in seconds.
  static func ownCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
  }
}
