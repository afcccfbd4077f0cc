import ArgumentParser
import PushlineCLI

/// The `pushline` executable: the commands live in PushlineCLI.
@main
extension PushlineCommand {}
