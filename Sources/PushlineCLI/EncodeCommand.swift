import ArgumentParser
import Foundation
import PushlineSchema
import PushlineText
import PushlineWire

/// `pushline encode`: reads a message as protobuf JSON and writes its wire bytes — the other
/// half of the edit-and-replay loop with `dump --json`.
struct EncodeCommand: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "encode",
    abstract: "Read a message as protobuf JSON and write its wire bytes.",
    discussion: "Reads FILE or standard input. Required fields must be present."
  )

  @OptionGroup var type: MessageTypeOption

  @Flag(help: "Write the bytes as hex text instead of raw bytes.")
  var hex = false

  @Option(name: .shortAndLong, help: "Write to this file instead of standard output.")
  var output: String?

  @Argument(help: "A file holding the JSON; '-' or none reads standard input.")
  var file: String?

  func run() async throws {
    let bytes = try Self.encode(json: try InputSource.readText(path: file), as: type.messageType)
    let data = hex ? Data((Hex.encode(bytes) + "\n").utf8) : Data(bytes)
    if let output {
      guard FileManager.default.createFile(atPath: output, contents: data) else {
        throw CommandFailure("cannot write \(output)")
      }
    } else {
      FileHandle.standardOutput.write(data)
    }
  }

  /// The wire bytes of the message `text` describes in protobuf JSON.
  ///
  /// - Throws: `CommandFailure` naming the JSON syntax error's offset or the mapping error's path.
  static func encode(json text: String, as type: any ReflectableMessage.Type) throws -> [UInt8] {
    do {
      return try ProtoJSON.decode(type, from: text).serializedBytes()
    } catch {
      throw CommandFailure("\(type.protoName): \(error)")
    }
  }
}
