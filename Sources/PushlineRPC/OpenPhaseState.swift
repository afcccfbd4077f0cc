/// A connection state machine's state whose open phase is taken out while it changes.
///
/// The open phase holds the connection's tables (its calls, their unfinished messages). Changed
/// where it sits, inside an enum case that still holds it, each change would copy the tables
/// first — a copy of the calls table per frame, costing as much as the call itself. Taken out
/// with ``takeOpen()``, held only by the caller, it is changed in place, then put back with
/// ``restore(_:)``.
protocol OpenPhaseState {
  associatedtype Open

  /// The state while its open phase is out.
  static var updating: Self { get }
  /// The open state with `open` as its phase.
  static func open(_ open: Open) -> Self
  /// The open phase, when the state is open.
  var openPhase: Open? { get }
  /// Whether the open phase is out.
  var isUpdating: Bool { get }
}

extension OpenPhaseState {
  /// The open phase, taken out (the state is ``updating`` until ``restore(_:)``); `nil` when
  /// the connection is not open.
  mutating func takeOpen() -> Open? {
    guard let open = openPhase else { return nil }
    self = .updating
    return open
  }

  /// Puts back what ``takeOpen()`` took, unless the connection closed meanwhile.
  mutating func restore(_ open: Open) {
    if isUpdating { self = .open(open) }
  }
}
