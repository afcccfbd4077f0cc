public import PushlineSchema

/// How one payload kind takes part in the tracker: whether a card of its kind is showable,
/// and how it reads in browse and bulletin form. Each kind is a plugin so that a flag can
/// switch it off without touching the core: its cards then simply are not shown.
public protocol CardPlugin: Sendable {
  /// The payload kind handled.
  var kind: PayloadKind { get }
  /// Whether `card`'s payload has what this plugin needs to show it.
  func isShowable(_ card: TrackerCard) -> Bool
  /// One line for the browse list (and the status line); amounts hidden when `privacy` is on.
  func browseText(_ card: TrackerCard, privacy: Bool) -> String
  /// The bulletin's text for `card`.
  func bulletinText(_ card: TrackerCard, privacy: Bool) -> String
}

/// The text shown instead of an amount in privacy mode.
public let hiddenAmount = "••••"
