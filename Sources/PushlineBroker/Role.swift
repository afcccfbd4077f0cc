/// What a token allows its holder to do; carried in the token's `role` claim.
public enum Role: String, Codable, Sendable, CaseIterable {
  /// Backend services: may publish to their topics.
  case publisher
  /// Drivers' clients: may subscribe to and pull their topics.
  case subscriber
  /// Operators: may do everything on their topics.
  case admin
}
