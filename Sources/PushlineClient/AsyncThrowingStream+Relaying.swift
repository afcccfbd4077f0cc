extension AsyncThrowingStream where Failure == any Error {
  /// `upstream`'s elements, relayed by a task of their own: what a ``TrackerSession`` returns
  /// when its transport's stream has another type, or when it watches what passes. `inspect`
  /// sees each element before it is relayed, and may throw to end the stream with that error.
  /// Ending the iteration cancels the task, and so the upstream.
  public static func relaying<Upstream: AsyncSequence & Sendable>(
    _ upstream: Upstream, inspect: @escaping @Sendable (Element) throws -> Void = { _ in }
  ) -> Self where Upstream.Element == Element, Element: Sendable {
    AsyncThrowingStream { continuation in
      let task = Task {
        do {
          for try await element in upstream {
            try inspect(element)
            continuation.yield(element)
          }
          continuation.finish()
        } catch {
          continuation.finish(throwing: error)
        }
      }
      continuation.onTermination = { _ in task.cancel() }
    }
  }
}
