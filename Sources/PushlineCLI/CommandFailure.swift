/// A failure a command reports to its user: printed as `Error: <message>`, exit status 1.
struct CommandFailure: Error, CustomStringConvertible {
  var description: String

  init(_ description: String) { self.description = description }
}
