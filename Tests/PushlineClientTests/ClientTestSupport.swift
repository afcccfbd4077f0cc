import PushlineClient
import PushlineSchema
import PushlineTesting

/// A card of `kind` with a displayable payload.
func card(
  _ id: String, priority: Double, kind: PayloadKind = .dailyEarnings, type: CardType = .browse, valid: Bool = true,
  expiresAt: Int64? = nil, statusPriority: Double? = nil, force: Bool? = nil, amount: String = "$10.00"
) -> TrackerCard {
  var card = TrackerCard(cardID: id, priority: priority, isValid: valid)
  card.cardType = type
  card.expiresAt = expiresAt
  card.statusModePriority = statusPriority
  card.shouldForceSwitchStatusMode = force
  card.lastUpdatedAt = 1_799_999_000
  var payload = TrackerCardPayload()
  switch kind {
  case .recentTrips:
    var trip = TrackerRecentTripsCard(title: id)
    trip.formattedTotal = amount
    trip.bulletinTitle = "\(id) done"
    payload.trackerRecentTripsCard = trip
  case .dailyEarnings:
    var day = TrackerDailyEarningsCard(title: id)
    day.formattedTotal = amount
    payload.trackerDailyEarningsCard = day
  case .weeklyEarnings:
    var week = TrackerWeeklyEarningsCard(title: id)
    week.formattedTotal = amount
    payload.trackerWeeklyEarningsCard = week
  case .dxgyProgress:
    var quest = TrackerDxGyProgressCard(title: id)
    quest.targetTrips = 3
    quest.formattedReward = amount
    payload.trackerDxGyProgressCard = quest
  case .dxgyCompletion:
    var done = TrackerDxGyCompletionCard(title: id)
    done.formattedReward = amount
    payload.trackerDxGyCompletionCard = done
  }
  card.payload = payload
  return card
}

/// A live update of `topic` carrying `cards` at consecutive offsets from `offset`.
func update(_ topic: String, epoch: Int64 = 7, from offset: Int64, _ cards: [TrackerCard], removing: [String] = [], snapshot: Bool = false)
  -> TopicUpdate
{
  var changes = cards.enumerated().map { CardChange(upserting: $1, offset: offset + Int64($0)) }
  changes += removing.enumerated().map { CardChange(removing: $1, offset: offset + Int64(cards.count + $0)) }
  var update = TopicUpdate(topic: topic, epoch: epoch, throughOffset: offset + Int64(changes.count) - 1)
  if snapshot {
    update.snapshot = true
    update.throughOffset = max(update.throughOffset, offset)
  }
  update.changes = changes
  return update
}
