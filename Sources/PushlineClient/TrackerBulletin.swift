public import PushlineSchema

/// A bulletin: a bulletin card's new version, announced once. It carries its plugin's text
/// both with and without amounts because it outlives the privacy setting it arrived under: a
/// screen that keeps bulletins shows each one as the setting of the moment says, so turning
/// privacy mode on hides the amounts of bulletins already shown too (and turning it off shows
/// them again).
public struct TrackerBulletin: Hashable, Sendable {
  public var topic: String
  public var card: TrackerCard
  public var offset: Int64
  /// The plugin's bulletin text with its amounts.
  public var textWithAmounts: String
  /// The plugin's bulletin text with its amounts hidden, for privacy mode.
  public var textWithoutAmounts: String

  /// The text to show now: amounts hidden when `privacy` is on.
  public func text(privacy: Bool) -> String { privacy ? textWithoutAmounts : textWithAmounts }
}
