import PushlineSchema
import PushlineWire

/// The messages behind the golden vectors in `Fixtures/`, built through the public API.
/// Each fixture was checked by hand field by field and with `protoc --decode`.
enum GoldenMessages {
  static var minimalCard: TrackerCard { TrackerCard(cardID: "a", priority: 1, isValid: true) }

  /// The representative card: recent-trips payload with every field, every optional field
  /// of the card set.
  static var fullCard: TrackerCard {
    var trips = TrackerRecentTripsCard(title: "Last trip")
    trips.formattedTotal = "$18.42"
    trips.formattedRequestAt = "Today 9:41"
    trips.vehicleStatusDescription = "Online · UberX"
    trips.callToAction = "See details"
    trips.bulletinTitle = "Trip complete"
    trips.lastTripUuid = "6f1c2a9e-3b7d-4c52-9a80-1e2f3a4b5c6d"
    var card = TrackerCard(cardID: "earnings/last-trip", priority: 10.5, isValid: true)
    card.payload = TrackerCardPayload()
    card.payload?.trackerRecentTripsCard = trips
    card.cardType = .browse
    card.expiresAt = 1_763_830_800
    card.lastUpdatedAt = 1_763_827_200
    var outage = OutageState()
    outage.isInOutage = false
    card.outageState = outage
    card.shouldForceSwitchStatusMode = true
    card.statusModePriority = -0.0
    return card
  }

  /// A weekly card: packed sint64 with negative values, nested Money.
  static var weeklyCard: TrackerWeeklyEarningsCard {
    var week = TrackerWeeklyEarningsCard(title: "Week")
    week.total = Money(currencyCode: "EUR", minorUnits: -150)
    week.tripCount = 300
    week.dailyMinorUnits = [0, -1, 1, 64, -65]
    return week
  }

  /// A quest in progress: a float, repeated sub-messages with required fields.
  static var questCard: TrackerDxGyProgressCard {
    var quest = TrackerDxGyProgressCard(title: "Quest")
    quest.completedTrips = 3
    quest.targetTrips = 128
    quest.progress = 0.5
    quest.tiers = [
      DxGyTier(trips: 10, reward: Money(currencyCode: "USD", minorUnits: 1_000)),
      DxGyTier(trips: 20, reward: Money(currencyCode: "USD", minorUnits: 2_500)),
    ]
    return quest
  }

  /// A question with packed data types and one alternate.
  static var question: Question {
    var question = Question(questionID: "q1", flowID: "f")
    question.scenario = .signIn
    question.dataTypes = [.phoneNumber, .password]
    question.collectionMode = .sequence
    var alternate = Question(questionID: "q1-otp", flowID: "f")
    alternate.scenario = .accountRecovery
    alternate.dataTypes = [.phoneOTP]
    question.alternates = [alternate]
    return question
  }

  /// A response carrying two validation errors at once.
  static var errorResponse: AnswerResponse {
    var response = AnswerResponse(flowID: "f")
    response.errors = [
      ValidationError(dataType: .email, code: "invalid_format"),
      ValidationError(dataType: .password, code: "too_short"),
    ]
    return response
  }

  /// A card carrying an undefined cardType (9) and unknown fields of every wire type.
  static var cardWithUnknowns: TrackerCard {
    var card = TrackerCard(cardID: "u", priority: 0, isValid: false)
    card.unknownFields = UnknownFields(bytes: [
      0x28, 0x09,  // 5: VARINT 9 — a CardType this schema does not define
      0xA0, 0x06, 0x07,  // 100: VARINT 7
      0xA9, 0x06, 1, 2, 3, 4, 5, 6, 7, 8,  // 101: I64
      0xB2, 0x06, 0x02, 0x68, 0x69,  // 102: LEN "hi"
      0xBD, 0x06, 9, 8, 7, 6,  // 103: I32
      0xC3, 0x06, 0xC8, 0x06, 0x01, 0xC4, 0x06,  // 104: group { 105: VARINT 1 }
    ])
    return card
  }

  /// Every golden vector: fixture file name (without `.hex`) and its message.
  static var all: [(name: String, message: any ReflectableMessage)] {
    [
      ("tracker-card-minimal", minimalCard),
      ("tracker-card-full", fullCard),
      ("weekly-earnings-card", weeklyCard),
      ("dxgy-progress-card", questCard),
      ("question", question),
      ("answer-response-errors", errorResponse),
      ("tracker-card-unknown-fields", cardWithUnknowns),
    ]
  }
}
