#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif
import ProtobufCPeer
import PushlineSchema

/// protobuf-c's C structs built field by field from Pushline's values — never from Pushline's
/// bytes — once, up front, as a C caller would build the message it sends. The builder owns
/// every struct, string and array it allocates and frees them when it goes away.
final class ProtobufCMessages {
  private var allocations: [UnsafeMutableRawPointer] = []

  deinit {
    for allocation in allocations { free(allocation) }
  }

  /// A `ProtobufCMessage *` to `card`, valid while the builder lives.
  func message(_ card: TrackerCard) -> UnsafeRawPointer { UnsafeRawPointer(make(card)) }

  /// A `ProtobufCMessage *` to `batch`, valid while the builder lives.
  func message(_ batch: TrackerCardBatch) -> UnsafeRawPointer {
    var c = Pushline__Tracker__TrackerCardBatch()
    pushline__tracker__tracker_card_batch__init(&c)
    (c.n_cards, c.cards) = array(batch.cards.map { Optional(make($0)) })
    return UnsafeRawPointer(store(c))
  }

  private func make(_ card: TrackerCard) -> UnsafeMutablePointer<Pushline__Tracker__TrackerCard> {
    var c = Pushline__Tracker__TrackerCard()
    pushline__tracker__tracker_card__init(&c)
    c.cardid = string(card.cardID)
    c.priority = card.priority
    c.isvalid = card.isValid ? 1 : 0
    c.payload = card.payload.map(make)
    if let value = card.cardType {
      c.has_cardtype = 1
      c.cardtype = Pushline__Tracker__CardType(rawValue: .init(value.rawValue))
    }
    (c.has_expiresat, c.expiresat) = optional(card.expiresAt)
    (c.has_lastupdatedat, c.lastupdatedat) = optional(card.lastUpdatedAt)
    c.outagestate = card.outageState.map(make)
    (c.has_shouldforceswitchstatusmode, c.shouldforceswitchstatusmode) = optional(card.shouldForceSwitchStatusMode.map { $0 ? 1 : 0 })
    (c.has_statusmodepriority, c.statusmodepriority) = optional(card.statusModePriority)
    return store(c)
  }

  private func make(_ payload: TrackerCardPayload) -> UnsafeMutablePointer<Pushline__Tracker__TrackerCardPayload> {
    var c = Pushline__Tracker__TrackerCardPayload()
    pushline__tracker__tracker_card_payload__init(&c)
    c.trackerrecenttripscard = payload.trackerRecentTripsCard.map(make)
    c.trackerdailyearningscard = payload.trackerDailyEarningsCard.map(make)
    c.trackerweeklyearningscard = payload.trackerWeeklyEarningsCard.map(make)
    c.trackerdxgyprogresscard = payload.trackerDxGyProgressCard.map(make)
    c.trackerdxgycompletioncard = payload.trackerDxGyCompletionCard.map(make)
    return store(c)
  }

  private func make(_ trips: TrackerRecentTripsCard) -> UnsafeMutablePointer<Pushline__Tracker__TrackerRecentTripsCard> {
    var c = Pushline__Tracker__TrackerRecentTripsCard()
    pushline__tracker__tracker_recent_trips_card__init(&c)
    c.title = string(trips.title)
    c.formattedtotal = string(trips.formattedTotal)
    c.formattedrequestat = string(trips.formattedRequestAt)
    c.vehiclestatusdescription = string(trips.vehicleStatusDescription)
    c.calltoaction = string(trips.callToAction)
    c.bulletintitle = string(trips.bulletinTitle)
    c.lasttripuuid = string(trips.lastTripUuid)
    return store(c)
  }

  private func make(_ money: Money) -> UnsafeMutablePointer<Pushline__Tracker__Money> {
    var c = Pushline__Tracker__Money()
    pushline__tracker__money__init(&c)
    c.currencycode = string(money.currencyCode)
    c.minorunits = money.minorUnits
    return store(c)
  }

  private func make(_ daily: TrackerDailyEarningsCard) -> UnsafeMutablePointer<Pushline__Tracker__TrackerDailyEarningsCard> {
    var c = Pushline__Tracker__TrackerDailyEarningsCard()
    pushline__tracker__tracker_daily_earnings_card__init(&c)
    c.title = string(daily.title)
    c.formattedtotal = string(daily.formattedTotal)
    c.total = daily.total.map(make)
    (c.has_tripcount, c.tripcount) = optional(daily.tripCount)
    (c.has_onlineseconds, c.onlineseconds) = optional(daily.onlineSeconds)
    c.formattedonlinetime = string(daily.formattedOnlineTime)
    (c.has_daystartsat, c.daystartsat) = optional(daily.dayStartsAt)
    c.calltoaction = string(daily.callToAction)
    return store(c)
  }

  private func make(_ weekly: TrackerWeeklyEarningsCard) -> UnsafeMutablePointer<Pushline__Tracker__TrackerWeeklyEarningsCard> {
    var c = Pushline__Tracker__TrackerWeeklyEarningsCard()
    pushline__tracker__tracker_weekly_earnings_card__init(&c)
    c.title = string(weekly.title)
    c.formattedtotal = string(weekly.formattedTotal)
    c.total = weekly.total.map(make)
    (c.has_tripcount, c.tripcount) = optional(weekly.tripCount)
    (c.has_onlineseconds, c.onlineseconds) = optional(weekly.onlineSeconds)
    (c.has_weekstartsat, c.weekstartsat) = optional(weekly.weekStartsAt)
    (c.has_weekendsat, c.weekendsat) = optional(weekly.weekEndsAt)
    (c.n_dailyminorunits, c.dailyminorunits) = array(weekly.dailyMinorUnits)
    c.calltoaction = string(weekly.callToAction)
    return store(c)
  }

  private func make(_ tier: DxGyTier) -> UnsafeMutablePointer<Pushline__Tracker__DxGyTier> {
    var c = Pushline__Tracker__DxGyTier()
    pushline__tracker__dx_gy_tier__init(&c)
    c.trips = tier.trips
    c.reward = make(tier.reward)
    c.formattedreward = string(tier.formattedReward)
    return store(c)
  }

  private func make(_ quest: TrackerDxGyProgressCard) -> UnsafeMutablePointer<Pushline__Tracker__TrackerDxGyProgressCard> {
    var c = Pushline__Tracker__TrackerDxGyProgressCard()
    pushline__tracker__tracker_dx_gy_progress_card__init(&c)
    c.title = string(quest.title)
    c.questid = string(quest.questID)
    (c.has_completedtrips, c.completedtrips) = optional(quest.completedTrips)
    (c.has_targettrips, c.targettrips) = optional(quest.targetTrips)
    c.reward = quest.reward.map(make)
    c.formattedreward = string(quest.formattedReward)
    (c.has_startsat, c.startsat) = optional(quest.startsAt)
    (c.has_endsat, c.endsat) = optional(quest.endsAt)
    c.formatteddeadline = string(quest.formattedDeadline)
    (c.has_progress, c.progress) = optional(quest.progress)
    (c.n_tiers, c.tiers) = array(quest.tiers.map { Optional(make($0)) })
    return store(c)
  }

  private func make(_ done: TrackerDxGyCompletionCard) -> UnsafeMutablePointer<Pushline__Tracker__TrackerDxGyCompletionCard> {
    var c = Pushline__Tracker__TrackerDxGyCompletionCard()
    pushline__tracker__tracker_dx_gy_completion_card__init(&c)
    c.title = string(done.title)
    c.questid = string(done.questID)
    c.bulletintitle = string(done.bulletinTitle)
    c.reward = done.reward.map(make)
    c.formattedreward = string(done.formattedReward)
    (c.has_completedtrips, c.completedtrips) = optional(done.completedTrips)
    (c.has_completedat, c.completedat) = optional(done.completedAt)
    return store(c)
  }

  private func make(_ outage: OutageState) -> UnsafeMutablePointer<Pushline__Tracker__OutageState> {
    var c = Pushline__Tracker__OutageState()
    pushline__tracker__outage_state__init(&c)
    (c.has_isinoutage, c.isinoutage) = optional(outage.isInOutage.map { $0 ? 1 : 0 })
    c.message = string(outage.message)
    (c.has_since, c.since) = optional(outage.since)
    c.servicename = string(outage.serviceName)
    return store(c)
  }

  // MARK: Memory

  /// protobuf-c's `has_` flag and value for an optional scalar.
  private func optional<Value: Numeric>(_ value: Value?) -> (protobuf_c_boolean, Value) {
    value.map { (1, $0) } ?? (0, 0)
  }

  /// A NUL-terminated copy of `value`; NULL (absent) for `nil`.
  private func string(_ value: String?) -> UnsafeMutablePointer<CChar>? {
    guard let value, let copy = strdup(value) else { return nil }
    allocations.append(UnsafeMutableRawPointer(copy))
    return copy
  }

  /// A heap copy of `value`.
  private func store<Message>(_ value: Message) -> UnsafeMutablePointer<Message> {
    let pointer = malloc(MemoryLayout<Message>.stride)!
    allocations.append(pointer)
    let typed = pointer.bindMemory(to: Message.self, capacity: 1)
    typed.initialize(to: value)
    return typed
  }

  /// A heap copy of `elements`: protobuf-c's count and array for a repeated field.
  private func array<Element>(_ elements: [Element]) -> (Int, UnsafeMutablePointer<Element>?) {
    guard !elements.isEmpty else { return (0, nil) }
    let pointer = malloc(MemoryLayout<Element>.stride * elements.count)!
    allocations.append(pointer)
    let typed = pointer.bindMemory(to: Element.self, capacity: elements.count)
    typed.initialize(from: elements, count: elements.count)
    return (elements.count, typed)
  }
}
