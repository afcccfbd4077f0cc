/// Which tracker mode shows a card (`pushline.tracker.CardType`).
///
/// An absent `cardType` means ``unknown``, the proto default.
public enum CardType: Int32, ProtoEnum {
  /// Shown in browse mode, ranked by priority.
  case browse = 1
  /// Shown in bulletin mode as an event.
  case bulletin = 2
  /// Not yet classified; the default.
  case unknown = 4

  public static let protoName = "pushline.tracker.CardType"

  public var name: String {
    switch self {
    case .browse: "BROWSE"
    case .bulletin: "BULLETIN"
    case .unknown: "UNKNOWN"
    }
  }
}
