import ArgumentParser
import PushlineSchema
import PushlineText
import PushlineWire

/// `pushline dump`: decodes bytes as a named message type and prints it.
struct DumpCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "dump",
    abstract: "Decode a message and print it readably, or as protobuf's canonical JSON.",
    discussion: """
      Reads the bytes from FILE, from standard input, or from --hex. On bytes that do not \
      decode it names the problem and its byte offset and exits with status 1.
      """
  )

  @OptionGroup var type: MessageTypeOption

  @Flag(help: "Print protobuf's canonical JSON mapping instead of the text form.")
  var json = false

  @Option(
    help: "The bytes as hex on the command line (white space, ':' and a 0x prefix ignored).",
    transform: { text in
      guard let bytes = Hex.decode(text) else {
        throw ValidationError("expected hex digits (0-9, a-f), two to a byte")
      }
      return bytes
    })
  var hex: [UInt8]?

  @Argument(help: "A file holding the bytes; '-' or none reads standard input.")
  var file: String?

  func validate() throws {
    if hex != nil, file != nil { throw ValidationError("give either --hex or a file, not both") }
  }

  func run() async throws {
    let bytes = try hex ?? InputSource.read(path: file)
    print(try Self.render(bytes, as: type.messageType, json: json), terminator: "")
  }

  /// What `dump` prints for `bytes`: the text form, or pretty JSON; both end with a newline.
  ///
  /// - Throws: `CommandFailure` naming the decoding error, its offset and the bytes around it.
  static func render(_ bytes: [UInt8], as type: any ReflectableMessage.Type, json: Bool) throws -> String {
    let message: any ReflectableMessage
    do {
      message = try type.init(serializedBytes: bytes, options: DecodingOptions())
    } catch {
      throw CommandFailure("\(type.protoName): \(error)\n\(context(of: bytes, at: error.offset))")
    }
    return json ? ProtoJSON.encode(message, pretty: true) + "\n" : TextDump.render(message)
  }

  /// The bytes around `offset`, with the offending one marked, to show where decoding stopped.
  static func context(of bytes: [UInt8], at offset: Int) -> String {
    let start = max(0, offset - 8)
    let end = min(bytes.count, offset + 8)
    guard start < end else { return "  (input is \(bytes.count) bytes)" }
    let cells = (start..<end).map { index in
      let cell = Hex.encode([bytes[index]])
      return index == offset ? "[\(cell)]" : cell
    }
    return "  bytes \(start)..<\(end): \(cells.joined(separator: " "))" + (offset >= bytes.count ? " [end]" : "")
  }
}
