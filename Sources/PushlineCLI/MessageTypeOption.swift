import ArgumentParser
import PushlineSchema
import PushlineWire

/// The `--type NAME` option shared by `dump` and `encode`.
struct MessageTypeOption: ParsableArguments {
  @Option(name: .customLong("type"), help: "The message type's proto name, e.g. pushline.tracker.TrackerCard.")
  var name: String

  /// The type named; valid after `validate()`.
  var messageType: any ReflectableMessage.Type {
    MessageRegistry.messageType(named: name)!
  }

  func validate() throws {
    guard MessageRegistry.messageType(named: name) != nil else {
      let known = MessageRegistry.all.map { "  \($0.protoName)" }.joined(separator: "\n")
      throw ValidationError("unknown message type '\(name)'; the types are:\n\(known)")
    }
  }
}
