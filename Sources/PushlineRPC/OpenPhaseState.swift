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
  /// Whether the state is open.
  var isOpen: Bool { get }
  /// Whether the open phase is out.
  var isUpdating: Bool { get }
  /// The open phase of this state, which is used up; `nil` when it is not open.
  consuming func intoOpenPhase() -> Open?
}

extension OpenPhaseState {
  /// The open phase, taken out (the state is ``updating`` until ``restore(_:)``); `nil` when
  /// the connection is not open.
  ///
  /// Moved out, not copied: reading the phase and then replacing the state would copy it —
  /// a retain of every table it holds, and their release — on every frame.
  mutating func takeOpen() -> Open? {
    guard isOpen else { return nil }
    let current = consume self
    self = .updating
    return current.intoOpenPhase()
  }

  /// Puts back what ``takeOpen()`` took, unless the connection closed meanwhile.
  mutating func restore(_ open: consuming Open) {
    if isUpdating { self = .open(open) }
  }
}
