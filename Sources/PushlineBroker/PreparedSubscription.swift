import PushlineSchema

/// A subscribe admitted, its starts built outside the broker's lock, not yet attached to its
/// topics: between ``Broker/subscribe(_:for:maxMessageSize:)``'s two steps.
struct PreparedSubscription {
  let request: SubscribeRequest
  let principal: Principal
  /// When it was admitted: its starts' time.
  let nowMillis: Int64
  /// Per topic of the request, in its order, the start built — `nil` for a topic that did not
  /// exist yet.
  let starts: [PreparedStart?]
}
