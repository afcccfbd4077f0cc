import PushlineRPC
import PushlineSchema
import PushlineWire

/// A subscription's updates as a stream's responses, pulled by the transport: each pull takes
/// what the subscription's queue holds (up to the broker's batch size) and encodes it. The
/// stream needs no task: it ends when the subscription does (an expired token, a shutdown),
/// and its end, whoever caused it, unsubscribes.
final class SubscriptionResponses: ResponseSource {
  let broker: Broker
  let subscription: Subscription

  init(broker: Broker, subscription: Subscription) {
    self.broker = broker
    self.subscription = subscription
  }

  func nextResponses(into batch: inout ResponseBatch) throws(RPCError) {
    for update in try broker.readyUpdates(for: subscription, buildingOffTheCaller: true) { batch.append(update) }
  }

  var hasMoreResponses: Bool {
    subscription.hasSomethingToSend
  }

  func connectionIsGoingAway() {
    broker.goAway(subscription)
  }

  func connectionWritabilityChanged(_ isWritable: Bool) {
    subscription.connectionWritabilityChanged(isWritable)
  }

  func streamEnded() {
    broker.unsubscribe(subscription)
  }
}
