import Synchronization

/// The bytes of a stream's responses that its connection has handed over and its consumer
/// not yet taken. Past ``pauseAt`` the connection stops reading (every stream on it waits),
/// until the consumer is down to half: a server that sends faster than the client consumes
/// meets backpressure in its socket — where a broker coalesces a card's versions — instead of
/// the client buffering without bound.
@usableFromInline
final class StreamCredit: Sendable {
  /// Bytes outstanding at which the connection stops reading: a few of the largest messages.
  static let pauseAt = 8 << 20

  private let outstanding = Atomic(0)
  /// Tells the connection the stream is down to half (or gone): it may read again.
  private let drained: @Sendable () -> Void

  init(drained: @escaping @Sendable () -> Void) {
    self.drained = drained
  }

  /// Counts `bytes` handed over; true when the stream now holds enough for the connection to
  /// stop reading.
  func handedOver(_ bytes: Int) -> Bool {
    outstanding.add(bytes, ordering: .relaxed).newValue >= Self.pauseAt
  }

  /// Counts `bytes` taken by the consumer, telling the connection when that brings the stream
  /// below half of ``pauseAt``.
  @usableFromInline
  func taken(_ bytes: Int) {
    let left = outstanding.subtract(bytes, ordering: .relaxed).newValue
    if left < Self.pauseAt / 2, left + bytes >= Self.pauseAt / 2 { drained() }
  }

  /// The consumer has gone: what it left counts no more.
  func ended() {
    if outstanding.exchange(0, ordering: .relaxed) >= Self.pauseAt / 2 { drained() }
  }
}
