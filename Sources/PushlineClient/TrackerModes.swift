/// What the tracker shows at one moment — the status, browse and connection of the three
/// modes' streams (bulletins are events, on their own stream). An immutable value.
public struct TrackerModes: Hashable, Sendable {
  /// The status mode's selected item; `nil` when no card is valid.
  public var status: TrackerItem?
  /// The browse mode's valid cards, ranked.
  public var browse: [TrackerItem]
  /// Whether amounts are hidden.
  public var privacy: Bool
  public var connection: ConnectionState

  /// Nothing to show yet.
  public static let empty = TrackerModes(status: nil, browse: [], privacy: false, connection: ConnectionState())
}
