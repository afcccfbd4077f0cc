/// Where the answer to one request of a completing handler goes (see ``UnaryCompletion``): the
/// transport's inbox for the call's connection, the call, and — on a pipelined call — which of
/// its requests it answers.
///
/// A value, not a closure: a closure capturing the inbox and the call id would be a heap
/// allocation per call, on the path the broker's publishes take.
public struct CallAnswer: Sendable {
  private let inbox: any CallAnswerInbox
  private let callID: UInt32
  private let requestIndex: UInt32

  /// The answer to the request at `requestIndex` of `callID` (numbered from 0 in arrival
  /// order, modulo 2³²; 0 for a unary call's only one), delivered through `inbox`; transports
  /// create these.
  public init(inbox: any CallAnswerInbox, callID: UInt32, requestIndex: UInt32 = 0) {
    self.inbox = inbox
    self.callID = callID
    self.requestIndex = requestIndex
  }

  /// Hands `result` — the encoded response, or the error that ends the call — to the call.
  public func send(_ result: Result<[UInt8], RPCError>) {
    inbox.answer(callID: callID, requestIndex: requestIndex, with: result)
  }
}

/// A transport's receiver of completing handlers' answers for one connection: safe to call
/// from any thread; the first answer to a request counts, and one after the call is over is
/// dropped.
public protocol CallAnswerInbox: AnyObject, Sendable {
  /// Hands `result` to the call `callID`, as the answer to its request at `requestIndex`.
  func answer(callID: UInt32, requestIndex: UInt32, with result: Result<[UInt8], RPCError>)
}
