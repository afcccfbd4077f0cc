import ArgumentParser
import Foundation
import ProtobufCPeer
import PushlineSchema
import PushlineWire
import SwiftProtobuf
import SwiftProtobufPeer

/// `pushline-bench codec`: encode and decode one card and a 50-card batch with Pushline,
/// swift-protobuf (generated code) and protobuf-c, on the same messages, checking first that
/// the three encoders produce the same bytes.
struct CodecBenchmark: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "codec",
    abstract: "Pushline vs swift-protobuf vs protobuf-c: encode and decode, ns/op and allocations/op."
  )

  @Option(help: "Samples per measurement; the median is reported.")
  var samples = 15

  func run() throws {
    let measure = Measure(samples: samples)
    var rows: [Row] = []
    for (label, message) in [("card", BenchmarkMessages.card.serializedBytes()), ("50-card batch", BenchmarkMessages.batch.serializedBytes())] {
      rows += try compare(label: label, bytes: message, isBatch: label != "card", measure: measure)
    }
    print("codec benchmark: median of \(samples) interleaved samples, ns/op (allocations/op); release build")
    print("protobuf-c encode = get_packed_size + malloc + pack + free; decode = unpack + free_unpacked")
    print("")
    let header = ["operation", "Pushline", "swift-protobuf", "protobuf-c", "swift-protobuf ÷ Pushline", "Pushline ÷ protobuf-c"]
    let table = [header] + rows.map(\.cells)
    let widths = header.indices.map { column in table.map { $0[column].count }.max()! }
    for line in table {
      print(zip(line, widths).map { $0.padding(toLength: $1, withPad: " ", startingAt: 0) }.joined(separator: "  "))
    }
  }

  struct Row {
    var operation: String
    var pushline: Measure.Result
    var swiftProtobuf: Measure.Result
    var protobufC: Measure.Result

    var cells: [String] {
      func cell(_ result: Measure.Result) -> String {
        String(format: "%.0f (%.1f)", result.nanosecondsPerOperation, result.allocationsPerOperation)
      }
      return [
        operation, cell(pushline), cell(swiftProtobuf), cell(protobufC),
        String(format: "%.2f×", swiftProtobuf.nanosecondsPerOperation / pushline.nanosecondsPerOperation),
        String(format: "%.2f×", pushline.nanosecondsPerOperation / protobufC.nanosecondsPerOperation),
      ]
    }
  }

  struct MismatchError: Error, CustomStringConvertible {
    var description: String
  }

  private func compare(label: String, bytes: [UInt8], isBatch: Bool, measure: Measure) throws -> [Row] {
    // Each implementation holds the same message, decoded from Pushline's bytes.
    let pushlineCard = isBatch ? TrackerCard() : try TrackerCard(serializedBytes: bytes)
    let pushlineBatch = isBatch ? try TrackerCardBatch(serializedBytes: bytes) : TrackerCardBatch()
    let peerCard = isBatch ? Pushline_Tracker_TrackerCard() : try Pushline_Tracker_TrackerCard(serializedBytes: bytes)
    let peerBatch = isBatch ? try Pushline_Tracker_TrackerCardBatch(serializedBytes: bytes) : Pushline_Tracker_TrackerCardBatch()
    let cMessage = bytes.withUnsafeBufferPointer { isBatch ? pbc_unpack_batch($0.baseAddress, $0.count) : pbc_unpack_card($0.baseAddress, $0.count) }
    guard let cMessage else { throw MismatchError(description: "protobuf-c cannot unpack the \(label)") }
    defer { pbc_free(cMessage) }

    let pushlineEncode: () -> [UInt8] = isBatch ? { pushlineBatch.serializedBytes() } : { pushlineCard.serializedBytes() }
    let peerEncode: () -> [UInt8] = isBatch
      ? { try! peerBatch.serializedBytes() } : { try! peerCard.serializedBytes() }
    let cEncode: () -> [UInt8] = {
      [UInt8](unsafeUninitializedCapacity: pbc_packed_size(cMessage)) { buffer, count in
        count = pbc_pack(cMessage, buffer.baseAddress!)
      }
    }
    for (name, encoded) in [("Pushline", pushlineEncode()), ("swift-protobuf", peerEncode()), ("protobuf-c", cEncode())]
    where encoded != bytes {
      throw MismatchError(description: "\(name) encodes the \(label) differently (\(encoded.count) vs \(bytes.count) bytes)")
    }

    let encodes = measure([
      { pushlineEncode().count },
      { peerEncode().count },
      {
        let size = pbc_packed_size(cMessage)
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: size)
        defer { buffer.deallocate() }
        return pbc_pack(cMessage, buffer)
      },
    ])
    let decodes = measure([
      {
        isBatch
          ? (try! TrackerCardBatch(serializedBytes: bytes)).cards.count
          : (try! TrackerCard(serializedBytes: bytes)).cardID.utf8.count
      },
      {
        isBatch
          ? (try! Pushline_Tracker_TrackerCardBatch(serializedBytes: bytes)).cards.count
          : (try! Pushline_Tracker_TrackerCard(serializedBytes: bytes)).cardID.utf8.count
      },
      {
        bytes.withUnsafeBufferPointer { buffer in
          let message = isBatch ? pbc_unpack_batch(buffer.baseAddress, buffer.count) : pbc_unpack_card(buffer.baseAddress, buffer.count)
          pbc_free(message)
          return message == nil ? 0 : 1
        }
      },
    ])
    return [
      Row(operation: "encode \(label) (\(bytes.count) B)", pushline: encodes[0], swiftProtobuf: encodes[1], protobufC: encodes[2]),
      Row(operation: "decode \(label)", pushline: decodes[0], swiftProtobuf: decodes[1], protobufC: decodes[2]),
    ]
  }
}
