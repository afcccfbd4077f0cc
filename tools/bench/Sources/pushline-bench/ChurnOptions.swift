import ArgumentParser

/// The churn scenario's rounds and mix of connections (see ``BrokerLoad/ChurnRole``): options of
/// `pushline-bench broker`, passed on as they are to the load generator it starts.
struct ChurnOptions: ParsableArguments {
  @Option(help: "(e): rounds of connecting, holding and dropping the connections.") var rounds = 30
  @Option(help: "(e): seconds a round's connections stay before they are dropped.") var holdSeconds = 1.0
  @Option(help: "(e): the share of a round's connections that subscribe to every topic and stop reading.") var stallingShare = 0.05
  @Option(help: "(e): the share of a round's connections that subscribe and reset the connection at once.") var vanishingShare = 0.05
  @Option(help: "(e): the share of a round's connections that present a token that does not verify.") var badTokenShare = 0.05
  @Option(help: "(e): the share of a round's connections that send garbage instead of a preface.") var garbageShare = 0.05

  func validate() throws {
    guard rounds >= 2, holdSeconds >= 0, stallingShare + vanishingShare + badTokenShare + garbageShare <= 1 else {
      throw ValidationError("(e) needs 2 rounds or more, and shares that add up to 1 at most")
    }
  }

  /// The options as a command line.
  var arguments: [String] {
    [
      "--rounds", "\(rounds)", "--hold-seconds", "\(holdSeconds)", "--stalling-share", "\(stallingShare)",
      "--vanishing-share", "\(vanishingShare)", "--bad-token-share", "\(badTokenShare)", "--garbage-share", "\(garbageShare)",
    ]
  }
}
