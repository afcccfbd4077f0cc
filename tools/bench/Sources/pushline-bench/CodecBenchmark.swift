import ArgumentParser
#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif
import ProtobufCPeer
import PushlineSchema
import PushlineWire
import SwiftProtobuf
import SwiftProtobufPeer

/// `pushline-bench codec`: encode and decode one card and a 50-card batch with Pushline,
/// swift-protobuf (generated code) and protobuf-c, on the same messages.
///
/// Each implementation gets the messages built through its own API from the same values
/// (``BenchmarkMessages``), never from another implementation's bytes; the benchmark first
/// checks that the three encoders produce identical bytes and that each decoder reads those
/// bytes back to the message it started from, and only then times anything.
struct CodecBenchmark: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "codec",
    abstract: "Pushline vs swift-protobuf vs protobuf-c: encode and decode, ns/op and mallocs/op."
  )

  @Option(help: "Samples per measurement; the median is reported.")
  var samples = 15

  @Option(help: "Approximate duration of one sample, in milliseconds.")
  var sampleMilliseconds = 20

  func validate() throws {
    guard samples > 0, sampleMilliseconds > 0 else { throw ValidationError("--samples and --sample-milliseconds must be positive") }
  }

  func run() throws {
    // Two processes (see AllocationCounter): the first checks the messages and counts
    // allocations with the interposer, then re-executes the benchmark to time it without.
    let passedCounts = AllocationCounter.countsFromCountingProcess()
    if passedCounts == nil { AllocationCounter.preloadIfNeeded() }

    let cMessages = ProtobufCMessages()
    defer { withExtendedLifetime(cMessages) {} }  // it owns the C structs the operations use
    let card = BenchmarkMessages.card
    let batch = BenchmarkMessages.batch
    let subjects = [
      try Subject(
        label: "card", pushline: card, swiftProtobuf: Pushline_Tracker_TrackerCard(card), protobufC: cMessages.message(card),
        unpack: pbc_unpack_card, pushlineProbe: { $0.cardID.utf8.count }, swiftProtobufProbe: { $0.cardID.utf8.count }
      ),
      try Subject(
        label: "50-card batch", pushline: batch, swiftProtobuf: Pushline_Tracker_TrackerCardBatch(batch),
        protobufC: cMessages.message(batch), unpack: pbc_unpack_batch,
        pushlineProbe: { $0.cards.count }, swiftProtobufProbe: { $0.cards.count }
      ),
    ]
    let operations = subjects.flatMap { $0.encodes + $0.decodes }

    var counts: [Double?]
    if let passedCounts, passedCounts.count == operations.count {
      counts = passedCounts
    } else {
      counts = operations.map { operation in
        AllocationCounter.allocationsPerOperation(iterations: 256) { Measure.run(operation, $0) }
      }
      AllocationCounter.execForTiming(passing: counts)  // returns only if it cannot
    }
    let timedWithInterposer = AllocationCounter.isActive

    print("pushline-bench codec: Pushline vs swift-protobuf 1.39.0 (generated code) vs protobuf-c \(protobufCVersion)")
    for subject in subjects {
      print("  \(subject.label): \(subject.bytes.count) bytes; the three encoders' output is identical, and all decoders read these bytes")
    }
    #if DEBUG
      let build = "DEBUG build: build with -c release for meaningful numbers"
    #else
      let build = "release build"
    #endif
    print("  ns/op: median of \(samples) interleaved samples of ~\(sampleMilliseconds) ms; \(build)")
    if counts.contains(where: { $0 == nil }) {
      print("  mallocs/op: n/a, malloc-interposer is not active; run: \(AllocationCounter.manualCommand)")
    } else {
      print("  mallocs/op: counted by malloc-interposer in a first pass; timed in a second process without it")
    }
    if timedWithInterposer {
      print("  note: timed with malloc-interposer loaded: each malloc/free costs a few ns more than with glibc alone")
    }
    print("  protobuf-c: C structs built once up front; encode = protobuf_c_message_pack into a preallocated")
    print("  buffer of get_packed_size bytes (sized once, reused); decode = unpack + free_unpacked")
    print("")

    let measure = Measure(samples: samples, sampleDuration: .milliseconds(sampleMilliseconds))
    var rows: [[String]] = []
    var variants: [[String]] = []
    for subject in subjects {
      let encodes = zip(measure(subject.encodes), counts.prefix(subject.encodes.count)).map(Measure.Result.init)
      counts.removeFirst(subject.encodes.count)
      let decodes = zip(measure(subject.decodes), counts.prefix(subject.decodes.count)).map(Measure.Result.init)
      counts.removeFirst(subject.decodes.count)
      rows.append(row("encode \(subject.label) (\(subject.bytes.count) B)", encodes[0], encodes[1], encodes[2]))
      rows.append(row("decode \(subject.label)", decodes[0], decodes[1], decodes[2]))
      variants.append(["encode \(subject.label)"] + encodes[2...4].map(cell) + encodes[2...4].map { ratio(encodes[0], $0) })
    }
    printTable(
      [["operation", "Pushline", "swift-protobuf", "protobuf-c", "swift-protobuf ÷ Pushline", "Pushline ÷ protobuf-c"]] + rows
    )
    print("")
    print("protobuf-c encode three ways; Pushline's encode returns a new exact-size [UInt8] (its own size pass included):")
    print("  A = pack into the preallocated buffer (the table above)")
    print("  B = get_packed_size + pack into the preallocated buffer")
    print("  C = get_packed_size + malloc + pack + free (a fresh buffer per message)")
    printTable([["operation", "A", "B", "C", "Pushline ÷ A", "Pushline ÷ B", "Pushline ÷ C"]] + variants)
  }

  private var protobufCVersion: String { String(cString: protobuf_c_version()) }

  private func row(_ operation: String, _ pushline: Measure.Result, _ swiftProtobuf: Measure.Result, _ protobufC: Measure.Result)
    -> [String]
  {
    [operation, cell(pushline), cell(swiftProtobuf), cell(protobufC), ratio(swiftProtobuf, pushline), ratio(pushline, protobufC)]
  }

  private func cell(_ result: Measure.Result) -> String {
    let time = String(Int(result.nanosecondsPerOperation.rounded()))
    guard let allocations = result.allocationsPerOperation else { return "\(time) (n/a)" }
    let count = allocations == allocations.rounded() ? String(Int(allocations)) : fixed(allocations, decimals: 1)
    return "\(time) (\(count))"
  }

  private func ratio(_ numerator: Measure.Result, _ denominator: Measure.Result) -> String {
    fixed(numerator.nanosecondsPerOperation / denominator.nanosecondsPerOperation, decimals: 2) + "×"
  }

  /// `value` with exactly `decimals` digits after the point.
  private func fixed(_ value: Double, decimals: Int) -> String {
    var scale = 1
    for _ in 0..<decimals { scale *= 10 }
    let scaled = Int((value * Double(scale)).rounded())
    let fraction = String(scaled % scale)
    return "\(scaled / scale)." + String(repeating: "0", count: decimals - fraction.count) + fraction
  }

  private func printTable(_ table: [[String]]) {
    let widths = table[0].indices.map { column in table.map { $0[column].count }.max()! }
    for line in table {
      var text = zip(line, widths).map { $0.padding(toWidth: $1) }.joined(separator: "  ")
      while text.last == " " { text.removeLast() }
      print(text)
    }
  }
}

extension String {
  fileprivate func padding(toWidth width: Int) -> String {
    self + String(repeating: " ", count: max(0, width - count))
  }
}

/// One message in its three forms, checked against each other, with the operations to time.
struct Subject {
  var label: String
  /// The encoding all three produce, which all three decoders read.
  var bytes: [UInt8]
  /// Pushline, swift-protobuf, protobuf-c (A: pack; B: size + pack; C: size + malloc + pack + free).
  var encodes: [() -> Int]
  /// Pushline, swift-protobuf, protobuf-c.
  var decodes: [() -> Int]

  struct Mismatch: Error, CustomStringConvertible {
    var description: String
  }

  init<PushlineMessage: WireMessage, SwiftProtobufMessage: SwiftProtobuf.Message & Equatable>(
    label: String,
    pushline: PushlineMessage,
    swiftProtobuf: SwiftProtobufMessage,
    protobufC: UnsafeRawPointer,
    unpack: @escaping (UnsafePointer<UInt8>?, Int) -> UnsafeMutableRawPointer?,
    pushlineProbe: @escaping (PushlineMessage) -> Int,
    swiftProtobufProbe: @escaping (SwiftProtobufMessage) -> Int
  ) throws {
    self.label = label

    // 1. The three encoders agree, byte for byte.
    let bytes = pushline.serializedBytes()
    let swiftProtobufBytes: [UInt8] = try swiftProtobuf.serializedBytes()
    let size = pbc_packed_size(protobufC)
    let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: size)  // kept for the benchmark's lifetime
    let protobufCBytes = Array(UnsafeBufferPointer(start: buffer, count: pbc_pack(protobufC, buffer)))
    for (name, other) in [("swift-protobuf", swiftProtobufBytes), ("protobuf-c", protobufCBytes)] where other != bytes {
      throw Mismatch(description: Self.describeMismatch(label: label, pushline: bytes, peer: name, other))
    }
    self.bytes = bytes

    // 2. Each decoder reads those bytes back to the message it started from.
    guard try PushlineMessage(serializedBytes: bytes) == pushline else {
      throw Mismatch(description: "Pushline decodes its \(label) bytes to a different message")
    }
    guard try SwiftProtobufMessage(serializedBytes: bytes) == swiftProtobuf else {
      throw Mismatch(description: "swift-protobuf decodes the \(label) bytes to a different message")
    }
    let unpacked = bytes.withUnsafeBufferPointer { unpack($0.baseAddress, $0.count) }
    guard let unpacked else { throw Mismatch(description: "protobuf-c cannot unpack the \(label) bytes") }
    let repacked = [UInt8](unsafeUninitializedCapacity: pbc_packed_size(unpacked)) { output, count in
      count = pbc_pack(unpacked, output.baseAddress!)
    }
    pbc_free(unpacked)
    guard repacked == bytes else { throw Mismatch(description: "protobuf-c unpacks and repacks the \(label) differently") }

    encodes = [
      { pushline.serializedBytes().count },
      { (try! swiftProtobuf.serializedBytes() as [UInt8]).count },
      { pbc_pack(protobufC, buffer) },
      {
        let size = pbc_packed_size(protobufC)
        precondition(size <= bytes.count)
        return pbc_pack(protobufC, buffer)
      },
      {
        let fresh = malloc(pbc_packed_size(protobufC))!.assumingMemoryBound(to: UInt8.self)
        defer { free(fresh) }
        return pbc_pack(protobufC, fresh)
      },
    ]
    decodes = [
      { pushlineProbe(try! PushlineMessage(serializedBytes: bytes)) },
      { swiftProtobufProbe(try! SwiftProtobufMessage(serializedBytes: bytes)) },
      {
        bytes.withUnsafeBufferPointer { input in
          let message = unpack(input.baseAddress, input.count)!
          pbc_free(message)
          return Int(bitPattern: message) & 1
        }
      },
    ]
  }

  private static func describeMismatch(label: String, pushline: [UInt8], peer: String, _ other: [UInt8]) -> String {
    let first = zip(pushline, other).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(pushline.count, other.count)
    func hex(_ bytes: [UInt8]) -> String {
      bytes.map { byte in
        let digits = String(byte, radix: 16)
        return digits.count == 1 ? "0" + digits : digits
      }.joined()
    }
    return """
      the encoders disagree on the \(label): Pushline \(pushline.count) bytes, \(peer) \(other.count) bytes, first difference at offset \(first)
        Pushline:       \(hex(pushline))
        \(peer.padding(toWidth: 15)) \(hex(other))
      """
  }
}
