public import ArgumentParser

/// The `pushline` command: every subcommand of the executable, as a library so that tests
/// can run them in-process.
public struct PushlineCommand: AsyncParsableCommand {
  public static let configuration = CommandConfiguration(
    commandName: "pushline",
    abstract: "Push tracker cards to clients over a compact binary protocol, and inspect its traffic.",
    subcommands: [
      DumpCommand.self, EncodeCommand.self, ServeCommand.self, PingCommand.self, TokenCommand.self, PublishCommand.self,
      DemoCommand.self, WatchCommand.self,
    ]
  )

  public init() {}
}
