import PushlineRPC
import PushlineSchema
import PushlineWire

/// A subscription's updates as a stream's responses, pulled by the transport: each pull takes
/// what the subscription's queue holds (up to the broker's batch size) and encodes it.
final class SubscriptionResponses: ResponseSource {
  let broker: Broker
  let subscription: Subscription

  init(broker: Broker, subscription: Subscription) {
    self.broker = broker
    self.subscription = subscription
  }

  func nextResponses() -> [[UInt8]] {
    // An ended subscription has nothing more to send; its handler ends the stream with the error.
    ((try? broker.readyUpdates(for: subscription)) ?? []).map { $0.serializedBytes() }
  }

  func connectionIsGoingAway() {
    broker.goAway(subscription)
  }
}
