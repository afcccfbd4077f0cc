/// Storage that keeps nothing: for tests, and for deployments that accept losing history on
/// restart. The broker serves from its own copy of the topics, in memory; this storage adds no
/// second one, which would double the memory of every card and the work of every commit for a
/// restart that loses it anyway. So every commit succeeds at once, and a broker started on this
/// storage — in a new process or in the same one — has no topics: each comes back with a new
/// epoch, and clients take a snapshot instead of resuming (PROTOCOL.md 3.1).
public final class InMemoryBrokerStorage: BrokerStorage {
  /// Storage for a broker whose topics live only as long as the broker.
  public init() {}

  /// None: nothing outlives the broker that committed it.
  public func loadTopics() async throws -> [TopicState] { [] }

  /// None: a retry reaching a new broker is a new publish.
  public func loadPublishRecords(sinceMillis: Int64) async throws -> [PublishRecord] { [] }

  /// Done at once: the broker applies the batch to its own topics.
  public func commit(_ batch: StorageBatch) async throws {}
}
