import PushlineRPC
import PushlineSchema
import PushlineWire
import Testing

@Suite("Server connection state machine")
struct ServerConnectionStateMachineTests {
  typealias Machine = ServerConnectionStateMachine

  static func hello(min: UInt32 = 1, max: UInt32 = 1, compressions: [Compression] = [.deflate], limits: Limits? = nil) -> Frame {
    var hello = ClientHello(minVersion: min, maxVersion: max)
    hello.compressions = compressions
    hello.limits = limits
    hello.authToken = "token"
    return Frame(kind: .handshake, callID: 0, payload: hello.serializedBytes())
  }

  /// A machine past the handshake, and what it answered.
  static func connected(_ configuration: Machine.Configuration = .init(compressions: [.deflate]), limits: Limits? = nil)
    -> (Machine, [Machine.Action])
  {
    var machine = Machine(configuration: configuration)
    #expect(machine.received(.preface(ConnectionPreface()), serverTimeMillis: 0).isEmpty)
    let actions = machine.received(.frame(hello(limits: limits)), serverTimeMillis: 1_763_830_800_000)
    return (machine, actions)
  }

  static func start(_ callID: UInt32, _ method: String = "/pushline.Health/Check") -> ConnectionElement {
    .frame(Frame(kind: .callStart, callID: callID, payload: CallStart(method: method).serializedBytes()))
  }

  static func message(_ callID: UInt32, _ bytes: [UInt8], compressed: Bool = false) -> ConnectionElement {
    .frame(Frame(kind: .message, callID: callID, payload: [compressed ? 1 : 0] + bytes))
  }

  /// The GOAWAY in a close action, decoded.
  static func goAway(in actions: [Machine.Action]) throws -> GoAway {
    guard case .close(let elements)? = actions.last, case .frame(let frame)? = elements.last, frame.kind == .goAway else {
      Issue.record("expected a close after GOAWAY, got \(actions)")
      return GoAway(lastCallID: 0)
    }
    return try GoAway(serializedBytes: frame.payload)
  }

  /// The GOAWAY that answers in place of the handshake — after the server's preface, then a
  /// close — decoded.
  static func goAwayInPlaceOfTheHandshake(in actions: [Machine.Action]) throws -> GoAway {
    guard case .close(let elements)? = actions.last, case .preface? = elements.first else {
      Issue.record("expected the server's preface, a GOAWAY and a close, got \(actions)")
      return GoAway(lastCallID: 0)
    }
    #expect(!actions.contains { if case .connectionReady = $0 { true } else { false } })
    return try goAway(in: actions)
  }

  static func status(in action: Machine.Action?) throws -> CallStatus? {
    guard case .write(let elements)? = action, case .frame(let frame)? = elements.first, frame.kind == .status else { return nil }
    return try CallStatus(serializedBytes: frame.payload)
  }

  @Test func handshakeAgreesVersionCompressionLimitsAndTellsTheTime() throws {
    let (_, actions) = Self.connected(limits: { var l = Limits(); l.maxMessageSize = 1_000; return l }())
    try #require(actions.count == 2)
    guard case .write(let elements) = actions[0], case .frame(let frame) = elements[1] else {
      Issue.record("expected the preface and ServerHello")
      return
    }
    #expect(elements[0] == .preface(ConnectionPreface()))
    let answer = try ServerHello(serializedBytes: frame.payload)
    #expect(answer.version == 1)
    #expect(answer.compression == .deflate)
    #expect(answer.serverTimeMillis == 1_763_830_800_000)
    guard case .connectionReady(let peer) = actions[1] else {
      Issue.record("expected connectionReady")
      return
    }
    #expect(peer.authToken == "token")
    #expect(peer.limits.maxMessageSize == 1_000)
    #expect(peer.limits.maxFrameSize == ConnectionLimits.defaults.maxFrameSize)
  }

  @Test func theClockIsReadForTheHandshakeOnly() {
    var reads = 0
    func now() -> Int64 {
      reads += 1
      return 1_763_830_800_000
    }
    var machine = Machine(configuration: .init())
    _ = machine.received(.preface(ConnectionPreface()), serverTimeMillis: now())
    _ = machine.received(.frame(Self.hello()), serverTimeMillis: now())
    #expect(reads == 1)
    _ = machine.received(Self.start(1), serverTimeMillis: now())
    _ = machine.received(Self.message(1, [7]), serverTimeMillis: now())
    _ = machine.received(.frame(Frame(kind: .halfClose, callID: 1)), serverTimeMillis: now())
    #expect(reads == 1)
  }

  @Test func noCommonVersionIsRefusedWithAReason() throws {
    var machine = Machine()
    _ = machine.received(.preface(ConnectionPreface(version: 3)), serverTimeMillis: 0)
    let actions = machine.received(.frame(Self.hello(min: 2, max: 3)), serverTimeMillis: 0)
    #expect(try Self.goAway(in: actions).code == StatusCode.failedPrecondition.rawValue)
    #expect(machine.isClosed)
  }

  /// The connection keeps the ClientHello's token and metadata as long as it lives: one past
  /// the limit is refused before it is decoded; one at the limit is taken.
  @Test func aClientHelloPastItsLimitIsRefused() throws {
    func hello(tokenBytes: Int) -> [UInt8] {
      var hello = ClientHello(minVersion: 1, maxVersion: 1)
      hello.authToken = String(repeating: "t", count: tokenBytes)
      return hello.serializedBytes()
    }
    func handshake(_ hello: [UInt8]) -> [Machine.Action] {
      var machine = Machine()
      _ = machine.received(.preface(ConnectionPreface()), serverTimeMillis: 0)
      return machine.received(.frame(Frame(kind: .handshake, callID: 0, payload: hello)), serverTimeMillis: 0)
    }
    // A token of n bytes (n below 16,384) takes n + 3: its tag and two bytes of length.
    let tokenless = ClientHello(minVersion: 1, maxVersion: 1).serializedBytes().count
    let atLimit = hello(tokenBytes: Machine.maxClientHelloSize - tokenless - 3)
    let pastLimit = hello(tokenBytes: Machine.maxClientHelloSize - tokenless - 2)
    #expect(atLimit.count == Machine.maxClientHelloSize && pastLimit.count == Machine.maxClientHelloSize + 1)
    let taken = handshake(atLimit)
    guard case .write(let elements)? = taken.first, case .frame(let frame)? = elements.last else {
      Issue.record("expected a ServerHello, got \(taken)")
      return
    }
    #expect(frame.kind == .handshake)
    let refused = try Self.goAway(in: handshake(pastLimit))
    #expect(refused.code == StatusCode.resourceExhausted.rawValue)
  }

  /// Metadata is counted as HTTP/2 counts headers, 32 bytes per entry beyond its key and
  /// value: an entry costs the server far more than the four bytes an empty one takes on the
  /// wire, and the connection keeps them all.
  @Test func aClientHelloOfManyEmptyMetadataEntriesIsRefused() throws {
    func handshake(entries: Int) -> [Machine.Action] {
      var hello = ClientHello(minVersion: 1, maxVersion: 1)
      hello.metadata = Array(repeating: MetadataEntry(key: ""), count: entries)
      var machine = Machine()
      _ = machine.received(.preface(ConnectionPreface()), serverTimeMillis: 0)
      return machine.received(.frame(Frame(kind: .handshake, callID: 0, payload: hello.serializedBytes())), serverTimeMillis: 0)
    }
    // 512 entries count 16,384 bytes, the limit, in about 2 KiB of ClientHello.
    guard case .write(let elements)? = handshake(entries: 512).first, case .frame(let frame)? = elements.last else {
      Issue.record("expected a ServerHello")
      return
    }
    #expect(frame.kind == .handshake)
    let refused = try Self.goAwayInPlaceOfTheHandshake(in: handshake(entries: 513))
    #expect(refused.code == StatusCode.resourceExhausted.rawValue)
  }

  /// A call keeps its CallStart's method and metadata while it lives: one past the limit, in
  /// bytes or in metadata counted as the handshake's is, ends that call only, before any of it
  /// is kept; the frames that follow for it are ignored, as for any call that has ended.
  @Test func aCallStartPastItsLimitEndsThatCallOnly() throws {
    var (machine, _) = Self.connected()
    let method = "/pushline.Health/Check"
    func start(_ callID: UInt32, padding: Int, entries: Int = 0) -> ConnectionElement {
      var start = CallStart(method: method)
      start.metadata = Array(repeating: MetadataEntry(key: ""), count: entries)
      var padded = MetadataEntry(key: "x")
      padded.value = String(repeating: "v", count: padding)
      if padding > 0 { start.metadata.append(padded) }
      return .frame(Frame(kind: .callStart, callID: callID, payload: start.serializedBytes()))
    }
    guard case .frame(let long) = start(1, padding: Machine.maxCallStartSize) else { return }
    let oversized = machine.received(start(1, padding: Machine.maxCallStartSize), serverTimeMillis: 0)
    #expect(long.payload.count > Machine.maxCallStartSize)
    #expect(try Self.status(in: oversized.first)?.code == StatusCode.resourceExhausted.rawValue)
    #expect(oversized.count == 1)
    #expect(machine.received(Self.message(1, [1]), serverTimeMillis: 0).isEmpty)
    #expect(machine.received(.frame(Frame(kind: .halfClose, callID: 1)), serverTimeMillis: 0).isEmpty)

    let manyEntries = machine.received(start(2, padding: 0, entries: 513), serverTimeMillis: 0)
    #expect(try Self.status(in: manyEntries.first)?.code == StatusCode.resourceExhausted.rawValue)
    let atLimit = machine.received(start(3, padding: 0, entries: 512), serverTimeMillis: 0)
    #expect(atLimit.first.map { if case .startCall(callID: 3, _) = $0 { true } else { false } } == true)
    #expect(!machine.isClosed)
  }

  /// A STATUS names what went wrong, sometimes with what the peer sent; its message is cut so
  /// that the frame fits the smallest frames a connection may agree on, and a handler's status
  /// whose metadata would still not fit the connection's frames goes without it.
  @Test func aStatusFitsTheConnectionsFrames() throws {
    var limits = Limits()
    limits.maxFrameSize = UInt32(Machine.minFrameSize)
    var (machine, _) = Self.connected(limits: limits)
    _ = machine.received(Self.start(1), serverTimeMillis: 0)
    _ = machine.received(Self.start(2), serverTimeMillis: 0)
    var status = CallStatus(code: StatusCode.notFound.rawValue)
    status.message = "no topic " + String(repeating: "é", count: 40_000)
    let endedLong = machine.endCall(callID: 1, status: status)
    let ended = try #require(endedLong)
    let sent = try CallStatus(serializedBytes: ended.status.payload)
    let message = try #require(sent.message)
    #expect(message.utf8.count <= 1_024 && message.hasPrefix("no topic éé") && message.hasSuffix("é…"))
    #expect(sent.code == status.code)
    status.message = "short"
    var detail = MetadataEntry(key: "detail")
    detail.value = String(repeating: "d", count: Machine.minFrameSize)
    status.metadata = [detail]
    let endedWithMetadata = machine.endCall(callID: 2, status: status)
    let withMetadata = try #require(endedWithMetadata)
    #expect(withMetadata.status.payload.count <= Machine.minFrameSize)
    #expect(try CallStatus(serializedBytes: withMetadata.status.payload).message == "short")
  }

  /// Smaller frames would cut every response into pieces of a few bytes.
  @Test func aClientTakingFramesBelowTheMinimumIsRefused() throws {
    var small = Limits()
    small.maxFrameSize = UInt32(Machine.minFrameSize - 1)
    var machine = Machine()
    _ = machine.received(.preface(ConnectionPreface()), serverTimeMillis: 0)
    let actions = machine.received(.frame(Self.hello(limits: small)), serverTimeMillis: 0)
    #expect(try Self.goAway(in: actions).code == StatusCode.failedPrecondition.rawValue)
    #expect(machine.isClosed)
    small.maxFrameSize = UInt32(Machine.minFrameSize)
    var taken = Machine()
    _ = taken.received(.preface(ConnectionPreface()), serverTimeMillis: 0)
    #expect(!taken.received(.frame(Self.hello(limits: small)), serverTimeMillis: 0).isEmpty)
    #expect(!taken.isClosed)
  }

  @Test func framesBeforeTheHandshakeAreViolations() throws {
    var machine = Machine()
    #expect(try Self.goAway(in: machine.received(Self.start(1), serverTimeMillis: 0)).code == StatusCode.internal.rawValue)
    var second = Machine()
    _ = second.received(.preface(ConnectionPreface()), serverTimeMillis: 0)
    #expect(try Self.goAway(in: second.received(Self.start(1), serverTimeMillis: 0)).code == StatusCode.internal.rawValue)
  }

  @Test func aCallRunsFromStartThroughMessagesToItsStatus() throws {
    var (machine, _) = Self.connected()
    guard case .startCall(1, let start)? = machine.received(Self.start(1), serverTimeMillis: 0).first else {
      Issue.record("expected the call to start")
      return
    }
    #expect(start.method == "/pushline.Health/Check")
    #expect(machine.received(Self.message(1, [7, 7]), serverTimeMillis: 0) == [.deliverMessage(callID: 1, payload: [7, 7], compressed: false)])
    #expect(machine.received(.frame(Frame(kind: .halfClose, callID: 1)), serverTimeMillis: 0) == [.deliverEndOfRequests(callID: 1)])
    #expect(machine.send(message: [9], compressed: false, callID: 1) == [.write([.message(callID: 1, compressed: false, bytes: [9])])])
    let finished = machine.finishCall(callID: 1, status: CallStatus(code: 0))
    #expect(try Self.status(in: finished.first)?.code == 0)
    // The call is over: late frames are ignored, responses dropped.
    #expect(machine.received(Self.message(1, [1]), serverTimeMillis: 0).isEmpty)
    #expect(machine.send(message: [9], compressed: false, callID: 1).isEmpty)
  }

  @Test func aBurstsActionsAreAppendedToOneArray() throws {
    var (machine, _) = Self.connected()
    var actions: [Machine.Action] = [.pongReceived(payload: [1])]  // what the burst held before
    machine.received(Self.start(1), serverTimeMillis: 0, into: &actions)
    machine.received(Self.message(1, [7, 7]), serverTimeMillis: 0, into: &actions)
    machine.received(.frame(Frame(kind: .halfClose, callID: 1)), serverTimeMillis: 0, into: &actions)
    try #require(actions.count == 4)
    #expect(actions[0] == .pongReceived(payload: [1]))
    guard case .startCall(1, let start) = actions[1] else {
      Issue.record("expected the call to start, got \(actions[1])")
      return
    }
    #expect(start.method == "/pushline.Health/Check")
    #expect(Array(actions[2...]) == [.deliverMessage(callID: 1, payload: [7, 7], compressed: false), .deliverEndOfRequests(callID: 1)])
  }

  /// A burst written as encoded frames is received as its frames one after another.
  @Test func encodedFramesAreReceivedAsTheirFrames() throws {
    let burst = [Self.start(1), Self.message(1, [7, 7]), .frame(Frame(kind: .halfClose, callID: 1))]
    var (oneByOne, _) = Self.connected()
    var expected: [Machine.Action] = []
    for element in burst { oneByOne.received(element, serverTimeMillis: 0, into: &expected) }
    var (machine, _) = Self.connected()
    let actions = machine.received(.encodedFrames(burst.flatMap { $0.frames.flatMap(\.bytes) }), serverTimeMillis: 0)
    #expect(actions.count == 3)
    #expect(actions == expected)
  }

  @Test func callIDsMustIncrease() throws {
    var (machine, _) = Self.connected()
    _ = machine.received(Self.start(5), serverTimeMillis: 0)
    #expect(try Self.goAway(in: machine.received(Self.start(5), serverTimeMillis: 0)).lastCallID == 5)
  }

  @Test func framesForCallsNeverStartedAreViolations() throws {
    var (machine, _) = Self.connected()
    let actions = machine.received(Self.message(9, [1]), serverTimeMillis: 0)
    #expect(try Self.goAway(in: actions).code == StatusCode.internal.rawValue)
  }

  @Test func callsBeyondTheConcurrencyLimitAreRefused() throws {
    var configuration = Machine.Configuration(compressions: [.deflate])
    configuration.limits.maxConcurrentCalls = 2
    var (machine, _) = Self.connected(configuration)
    _ = machine.received(Self.start(1), serverTimeMillis: 0)
    _ = machine.received(Self.start(2), serverTimeMillis: 0)
    #expect(try Self.status(in: machine.received(Self.start(3), serverTimeMillis: 0).first)?.code == StatusCode.resourceExhausted.rawValue)
    _ = machine.finishCall(callID: 1, status: CallStatus(code: 0))
    guard case .startCall(4, _)? = machine.received(Self.start(4), serverTimeMillis: 0).first else {
      Issue.record("a slot freed by a finished call is usable")
      return
    }
  }

  @Test func anOversizedMessageEndsItsCallOnly() throws {
    var (machine, _) = Self.connected(limits: { var l = Limits(); l.maxMessageSize = 4; return l }())
    _ = machine.received(Self.start(1), serverTimeMillis: 0)
    let actions = machine.received(Self.message(1, [1, 2, 3, 4, 5]), serverTimeMillis: 0)
    #expect(actions.first == .cancelCall(callID: 1))
    #expect(try Self.status(in: actions.last)?.code == StatusCode.resourceExhausted.rawValue)
    #expect(!machine.isClosed)
  }

  @Test func aSecondRequestOnACallIsRefusedAsItArrives() throws {
    var (machine, _) = Self.connected()
    _ = machine.received(Self.start(1), serverTimeMillis: 0)
    #expect(machine.received(Self.message(1, [7]), serverTimeMillis: 0) == [.deliverMessage(callID: 1, payload: [7], compressed: false)])
    let actions = machine.received(Self.message(1, [8]), serverTimeMillis: 0)
    #expect(actions.first == .cancelCall(callID: 1))
    #expect(try Self.status(in: actions.last)?.code == StatusCode.invalidArgument.rawValue)
    // The connection goes on.
    _ = machine.received(Self.start(2), serverTimeMillis: 0)
    #expect(machine.received(Self.message(2, [9]), serverTimeMillis: 0) == [.deliverMessage(callID: 2, payload: [9], compressed: false)])
  }

  /// A pipelined method's call takes request after request, each handed over as it arrives
  /// and held by nothing: a stream of them fits a budget that would not hold two.
  @Test func aPipelinedCallTakesRequestAfterRequestWithoutHoldingThem() throws {
    let pipelined = "/test.Pipelined/Echo"
    var (machine, _) = Self.connected(
      Machine.Configuration(compressions: [.deflate], maxBufferedRequestBytes: 100, pipelinedMethods: [pipelined]))
    _ = machine.received(Self.start(1, pipelined), serverTimeMillis: 0)
    let sixty = [UInt8](repeating: 1, count: 60)
    for _ in 0..<5 {
      #expect(machine.received(Self.message(1, sixty), serverTimeMillis: 0) == [.deliverMessage(callID: 1, payload: sixty[...], compressed: false)])
      #expect(machine.send(message: [9], compressed: false, callID: 1) == [.write([.message(callID: 1, compressed: false, bytes: [9])])])
    }
    #expect(machine.received(.frame(Frame(kind: .halfClose, callID: 1)), serverTimeMillis: 0) == [.deliverEndOfRequests(callID: 1)])
    // After the HALF_CLOSE, a request is a violation of the call, as on any call: it ends with
    // INTERNAL once its handler is done (the requests before it were answered).
    #expect(machine.received(Self.message(1, [1]), serverTimeMillis: 0).isEmpty)
    #expect(try Self.status(in: machine.finishCall(callID: 1, status: CallStatus(code: 0)).last)?.code == StatusCode.internal.rawValue)
    // Other methods still take one request.
    _ = machine.received(Self.start(2), serverTimeMillis: 0)
    _ = machine.received(Self.message(2, [1]), serverTimeMillis: 0)
    #expect(try Self.status(in: machine.received(Self.message(2, [1]), serverTimeMillis: 0).last)?.code == StatusCode.invalidArgument.rawValue)
  }

  /// A connection's pipelined calls together may have as many requests unanswered as the
  /// connection allows calls; a request past that ends its call with RESOURCE_EXHAUSTED, and
  /// each answer, or the end of a call, makes room again.
  @Test func pipelinedCallsShareOneBudgetOfUnansweredRequests() throws {
    let pipelined = "/test.Pipelined/Echo"
    var configuration = Machine.Configuration(compressions: [.deflate], pipelinedMethods: [pipelined])
    configuration.limits.maxConcurrentCalls = 3
    var (machine, _) = Self.connected(configuration)
    _ = machine.received(Self.start(1, pipelined), serverTimeMillis: 0)
    _ = machine.received(Self.start(2, pipelined), serverTimeMillis: 0)
    for _ in 0..<2 { #expect(machine.received(Self.message(1, [1]), serverTimeMillis: 0).count == 1) }
    #expect(machine.received(Self.message(2, [2]), serverTimeMillis: 0) == [.deliverMessage(callID: 2, payload: [2], compressed: false)])
    // An answer on call 1 makes room for one more request, on either call.
    _ = machine.send(message: [9], compressed: false, callID: 1)
    #expect(machine.received(Self.message(2, [2]), serverTimeMillis: 0) == [.deliverMessage(callID: 2, payload: [2], compressed: false)])
    // Past the budget the call takes no more: the request it has is answered, then it ends.
    #expect(machine.received(Self.message(1, [1]), serverTimeMillis: 0) == [.deliverEndOfRequests(callID: 1)])
    #expect(machine.received(Self.message(1, [1]), serverTimeMillis: 0).isEmpty)
    #expect(machine.send(message: [9], compressed: false, callID: 1) == [.write([.message(callID: 1, compressed: false, bytes: [9])])])
    let end = machine.finishCall(callID: 1, status: CallStatus(code: 0))
    #expect(try Self.status(in: end.last)?.code == StatusCode.resourceExhausted.rawValue)
    // Call 1's end gives its room back.
    _ = machine.received(Self.start(3, pipelined), serverTimeMillis: 0)
    #expect(machine.received(Self.message(3, [3]), serverTimeMillis: 0) == [.deliverMessage(callID: 3, payload: [3], compressed: false)])
    #expect(!machine.isClosed)
  }

  /// A pipelined call refused mid-way (a request over the message limit) ends in its place in
  /// the order: the requests before it are answered, then the refusal's status follows in place
  /// of the handler's OK; a failure of the handler's own, which came first, stands.
  @Test func aPipelinedCallRefusedMidWayAnswersTheRequestsBeforeTheRefusal() throws {
    let pipelined = "/test.Pipelined/Echo"
    var configuration = Machine.Configuration(compressions: [.deflate], pipelinedMethods: [pipelined])
    configuration.limits.maxMessageSize = 4
    var (machine, _) = Self.connected(configuration)
    for callID: UInt32 in 1...2 {
      _ = machine.received(Self.start(callID, pipelined), serverTimeMillis: 0)
      for _ in 0..<2 { #expect(machine.received(Self.message(callID, [1]), serverTimeMillis: 0).count == 1) }
      #expect(machine.received(Self.message(callID, [1, 2, 3, 4, 5]), serverTimeMillis: 0) == [.deliverEndOfRequests(callID: callID)])
      for _ in 0..<2 { #expect(machine.send(message: [9], compressed: false, callID: callID).count == 1) }
    }
    #expect(try Self.status(in: machine.finishCall(callID: 1, status: CallStatus(code: 0)).last)?.code == StatusCode.resourceExhausted.rawValue)
    let failed = machine.finishCall(callID: 2, status: CallStatus(code: StatusCode.unavailable.rawValue))
    #expect(try Self.status(in: failed.last)?.code == StatusCode.unavailable.rawValue)
    #expect(!machine.isClosed)
  }

  /// Requests held for calls not yet half-closed, and messages still arriving in pieces, share
  /// one budget per connection; a call's HALF_CLOSE or end gives its share back.
  @Test func requestsNotYetEndedShareOneBudgetPerConnection() throws {
    var (machine, _) = Self.connected(Machine.Configuration(compressions: [.deflate], maxBufferedRequestBytes: 100))
    for callID: UInt32 in 1...4 { _ = machine.received(Self.start(callID), serverTimeMillis: 0) }
    let sixty = [UInt8](repeating: 1, count: 60)
    #expect(machine.received(Self.message(1, sixty), serverTimeMillis: 0).first == .deliverMessage(callID: 1, payload: sixty[...], compressed: false))
    // 60 held and 61 more (the flag byte too) would pass 100.
    let refused = machine.received(Self.message(2, sixty), serverTimeMillis: 0)
    #expect(refused.first == .cancelCall(callID: 2))
    #expect(try Self.status(in: refused.last)?.code == StatusCode.resourceExhausted.rawValue)
    // The first piece of a message in pieces counts as well.
    let piece = ConnectionElement.frame(Frame(kind: .message, flags: MessageFraming.continues, callID: 3, payload: [0] + sixty))
    #expect(machine.received(piece, serverTimeMillis: 0).first == .cancelCall(callID: 3))
    // Call 1's HALF_CLOSE ends its request, which still counts until its handler takes it: a
    // call may wait for its turn to start (2.7), holding its request as much as before.
    #expect(machine.received(.frame(Frame(kind: .halfClose, callID: 1)), serverTimeMillis: 0) == [.deliverEndOfRequests(callID: 1)])
    #expect(machine.received(Self.message(4, sixty), serverTimeMillis: 0).first == .cancelCall(callID: 4))
    // Its handler takes it: the budget is free again.
    machine.requestTaken(callID: 1)
    _ = machine.received(Self.start(5), serverTimeMillis: 0)
    let pieceOf5 = ConnectionElement.frame(Frame(kind: .message, flags: MessageFraming.continues, callID: 5, payload: [0] + sixty))
    #expect(machine.received(pieceOf5, serverTimeMillis: 0).isEmpty)  // held: the message goes on
    _ = machine.received(Self.start(6), serverTimeMillis: 0)
    #expect(machine.received(Self.message(6, sixty), serverTimeMillis: 0).first == .cancelCall(callID: 6))
    // Call 5's end gives its piece back.
    _ = machine.finishCall(callID: 5, status: CallStatus(code: 0))
    _ = machine.received(Self.start(7), serverTimeMillis: 0)
    #expect(machine.received(Self.message(7, sixty), serverTimeMillis: 0).first == .deliverMessage(callID: 7, payload: sixty[...], compressed: false))
    #expect(!machine.isClosed)
  }

  /// The budget counts messages' bytes, not their compressed flags, as the message limit does:
  /// requests of exactly the budget fit it (four of the 4 MiB limit in the default 16 MiB), whole
  /// or in pieces.
  @Test func theBudgetCountsMessagesWithoutTheirFlags() throws {
    var (machine, _) = Self.connected(Machine.Configuration(compressions: [.deflate], maxBufferedRequestBytes: 100))
    for callID: UInt32 in 1...3 { _ = machine.received(Self.start(callID), serverTimeMillis: 0) }
    let sixty = [UInt8](repeating: 1, count: 60), thirty = [UInt8](repeating: 2, count: 30)
    #expect(machine.received(Self.message(1, sixty), serverTimeMillis: 0).first == .deliverMessage(callID: 1, payload: sixty[...], compressed: false))
    let piece = { (payload: [UInt8]) in ConnectionElement.frame(Frame(kind: .message, flags: MessageFraming.continues, callID: 2, payload: payload)) }
    #expect(machine.received(piece([0] + thirty), serverTimeMillis: 0).isEmpty)  // 90 held
    #expect(machine.received(piece(Array(thirty.prefix(10))), serverTimeMillis: 0).isEmpty)  // 100: the budget, exactly
    #expect(machine.received(Self.message(3, [7]), serverTimeMillis: 0).first == .cancelCall(callID: 3))  // 101
    #expect(!machine.isClosed)
  }

  @Test func cancellationStopsTheHandlerWithoutAStatus() {
    var (machine, _) = Self.connected()
    _ = machine.received(Self.start(1), serverTimeMillis: 0)
    #expect(machine.received(.frame(Frame(kind: .cancel, callID: 1)), serverTimeMillis: 0) == [.cancelCall(callID: 1)])
    #expect(machine.finishCall(callID: 1, status: CallStatus(code: 1)).isEmpty)
  }

  @Test func pingsAreAnsweredUntilTheyBecomeAFlood() throws {
    var configuration = Machine.Configuration(compressions: [.deflate])
    configuration.pingBudget = 3
    var (machine, _) = Self.connected(configuration)
    let ping = ConnectionElement.frame(Frame(kind: .ping, callID: 0, payload: [1, 2, 3, 4, 5, 6, 7, 8]))
    for _ in 0..<3 {
      #expect(machine.received(ping, serverTimeMillis: 0) == [.write([.frame(Frame(kind: .pong, callID: 0, payload: [1, 2, 3, 4, 5, 6, 7, 8]))])])
    }
    _ = machine.received(Self.start(1), serverTimeMillis: 0)  // Activity resets the budget.
    for _ in 0..<3 { _ = machine.received(ping, serverTimeMillis: 0) }
    let flood = machine.received(ping, serverTimeMillis: 0)
    #expect(flood.first == .cancelCall(callID: 1))
    #expect(try Self.goAway(in: flood).code == StatusCode.resourceExhausted.rawValue)
  }

  /// A client on a quiet connection pings once per keepalive interval for as long as it stays:
  /// that is never a flood, however many; pings closer together than half the interval are.
  @Test func pingsKeepingToTheKeepaliveIntervalAreNeverAFlood() throws {
    var configuration = Machine.Configuration(compressions: [.deflate])
    configuration.keepaliveIntervalMillis = 30_000
    configuration.pingBudget = 3
    var (machine, _) = Self.connected(configuration)
    let ping = ConnectionElement.frame(Frame(kind: .ping, callID: 0, payload: [1, 2, 3, 4, 5, 6, 7, 8]))
    let pong = Machine.Action.write([.frame(Frame(kind: .pong, callID: 0, payload: [1, 2, 3, 4, 5, 6, 7, 8]))])
    for index in 0..<50 {
      #expect(machine.received(ping, serverTimeMillis: 1_000 + Int64(index) * 15_000) == [pong])
    }
    let last: Int64 = 1_000 + 49 * 15_000
    // The last of them and two more within a few milliseconds fill the budget; a fourth is a flood.
    for index in 1...2 { #expect(machine.received(ping, serverTimeMillis: last + Int64(index)) == [pong]) }
    #expect(try Self.goAway(in: machine.received(ping, serverTimeMillis: last + 3)).code == StatusCode.resourceExhausted.rawValue)
  }

  @Test func aRefusedConnectionHearsWhyAndWhenToComeBackInAnswerToItsHandshake() throws {
    let refusal = RPCError(code: .unavailable, message: "too many clients are connecting", retryAfterMillis: 700)
    var machine = Machine(configuration: .init(), refusal: refusal)
    #expect(machine.received(.preface(ConnectionPreface()), serverTimeMillis: 0).isEmpty)
    let goAway = try Self.goAwayInPlaceOfTheHandshake(in: machine.received(.frame(Self.hello()), serverTimeMillis: 0))
    #expect(goAway.code == StatusCode.unavailable.rawValue && goAway.retryAfterMillis == 700)
    #expect(goAway.message == "too many clients are connecting")
    #expect(machine.isClosed)
  }

  /// A connection shut down before its handshake has arrived (before or after the preface)
  /// hears why and when to come back in place of the ServerHello: the shutdown's GOAWAY with
  /// its hint, or on a connection refused past the accept rate, the refusal's.
  @Test(arguments: [nil, RPCError(code: .unavailable, message: "too many clients are connecting", retryAfterMillis: 700)])
  func aShutdownBeforeTheHandshakeAnswersWithAGoAway(refusal: RPCError?) throws {
    for prefaceArrived in [false, true] {
      var machine = Machine(configuration: .init(), refusal: refusal)
      if prefaceArrived { #expect(machine.received(.preface(ConnectionPreface()), serverTimeMillis: 0).isEmpty) }
      let goAway = try Self.goAwayInPlaceOfTheHandshake(in: machine.shutDown(retryAfterMillis: 1234))
      #expect(goAway.code == StatusCode.unavailable.rawValue && goAway.lastCallID == 0)
      #expect(goAway.retryAfterMillis == refusal?.retryAfterMillis ?? 1234)
      #expect(goAway.message == refusal?.message ?? "the server is shutting down")
      #expect(machine.isClosed)
      #expect(machine.received(.frame(Self.hello()), serverTimeMillis: 0).isEmpty)
    }
  }

  @Test func shutdownDrainsCallsInProgressAndRefusesNewOnes() throws {
    var (machine, _) = Self.connected()
    _ = machine.received(Self.start(1), serverTimeMillis: 0)
    let goAwayActions = machine.shutDown(retryAfterMillis: 500)
    guard case .write(let elements)? = goAwayActions.first, case .frame(let frame)? = elements.first else {
      Issue.record("expected a GOAWAY while a call is in progress")
      return
    }
    let goAway = try GoAway(serializedBytes: frame.payload)
    #expect(goAway.lastCallID == 1)
    #expect(goAway.retryAfterMillis == 500)
    // A call crossing the GOAWAY is refused with its hint: any client, not only Pushline's
    // own, learns when to come back.
    let crossing = try #require(try Self.status(in: machine.received(Self.start(2), serverTimeMillis: 0).first))
    #expect(crossing.code == StatusCode.unavailable.rawValue && crossing.retryAfterMillis == 500)
    #expect(!machine.isClosed)
    guard case .close(let after)? = machine.finishCall(callID: 1, status: CallStatus(code: 0)).last else {
      Issue.record("the connection closes when its last call ends")
      return
    }
    #expect(after.count == 1)
    #expect(machine.isClosed)
  }

  @Test func endingACallGivesItsStatusFrameAndWhetherTheConnectionThenCloses() throws {
    var (machine, _) = Self.connected()
    _ = machine.received(Self.start(1), serverTimeMillis: 0)
    _ = machine.received(Self.start(2), serverTimeMillis: 0)
    var status = CallStatus(code: StatusCode.notFound.rawValue)
    status.message = "no such topic"
    let ended = machine.endCall(callID: 1, status: status)
    let first = try #require(ended)
    #expect(first.status.kind == .status && first.status.callID == 1)
    #expect(try CallStatus(serializedBytes: first.status.payload) == status)
    #expect(!first.closes)
    #expect(machine.endCall(callID: 1, status: status) == nil)  // over: nothing more to write
    _ = machine.shutDown()
    let lastEnded = machine.endCall(callID: 2, status: CallStatus(code: 0))
    let last = try #require(lastEnded)
    #expect(try CallStatus(serializedBytes: last.status.payload) == CallStatus(code: 0))
    #expect(last.closes)
    #expect(machine.isClosed)
  }

  /// A client that sends its last bytes (it shut its side down, or closed) still gets the
  /// answers of the calls it finished: a half-closed call goes on, a pipelined one ends after
  /// the requests it sent, one still sending is cancelled; the connection closes, with no
  /// GOAWAY, when the last call served ends.
  @Test func aClientThatFinishedSendingIsAnsweredThenClosed() throws {
    let pipelined = "/test.Pipe/Line"
    var (machine, _) = Self.connected(Machine.Configuration(compressions: [.deflate], pipelinedMethods: [pipelined]))
    _ = machine.received(Self.start(1), serverTimeMillis: 0)
    _ = machine.received(Self.message(1, [1]), serverTimeMillis: 0)
    _ = machine.received(.frame(Frame(kind: .halfClose, callID: 1, payload: [])), serverTimeMillis: 0)
    _ = machine.received(Self.start(3, pipelined), serverTimeMillis: 0)
    _ = machine.received(Self.message(3, [2]), serverTimeMillis: 0)
    _ = machine.received(Self.start(5), serverTimeMillis: 0)
    _ = machine.received(Self.message(5, [3]), serverTimeMillis: 0)
    #expect(machine.peerFinishedSending() == [.deliverEndOfRequests(callID: 3), .cancelCall(callID: 5)])
    #expect(machine.finishCall(callID: 3, status: CallStatus(code: 0)).count == 1)
    #expect(!machine.isClosed)
    guard case .close(let after)? = machine.finishCall(callID: 1, status: CallStatus(code: 0)).last else {
      Issue.record("the connection closes when its last call served ends")
      return
    }
    #expect(after.count == 1)  // the call's status, no GOAWAY
    #expect(machine.isClosed)
  }

  /// With nothing left to answer, or before the handshake, it closes at once.
  @Test func aClientThatFinishedSendingWithNothingToAnswerIsClosedAtOnce() {
    var (machine, _) = Self.connected()
    #expect(machine.peerFinishedSending() == [.close(after: [])])
    var fresh = Machine(configuration: .init())
    #expect(fresh.peerFinishedSending() == [.close(after: [])])
  }

  @Test func unknownFrameKindsAreIgnored() {
    var (machine, _) = Self.connected()
    #expect(machine.received(.frame(Frame(kind: FrameKind(rawValue: 0x42), callID: 0, payload: [1])), serverTimeMillis: 0).isEmpty)
    #expect(!machine.isClosed)
  }

  @Test func decoderViolationsCloseWithTheirReason() throws {
    var (machine, _) = Self.connected()
    let actions = machine.receivedViolation(ProtocolViolation(.frameTooLarge, "too big"))
    #expect(try Self.goAway(in: actions).message == "frame too large: too big")
    #expect(machine.received(Self.start(1), serverTimeMillis: 0).isEmpty)
  }
}
