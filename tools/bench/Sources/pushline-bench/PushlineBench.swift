import ArgumentParser

/// `pushline-bench`: benchmarks that compare Pushline with its peers in the same run.
@main
struct PushlineBench: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "pushline-bench",
    abstract: "Benchmarks Pushline against its peers in the same run.",
    subcommands: [
      CodecBenchmark.self, RPCBenchmark.self, RPCBenchmarkServer.self, BrokerBenchmark.self, BrokerBenchmarkServer.self, BrokerLoad.self,
      ClientBenchmark.self, TopicBenchmark.self,
    ]
  )
}
