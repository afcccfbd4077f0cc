/// What travels on a connection in either direction: each peer's preface once, first, then
/// frames.
public enum ConnectionElement: Hashable, Sendable {
  case preface(ConnectionPreface)
  case frame(Frame)
}
