import ArgumentParser
import Foundation
import PushlineSchema
import PushlineText
import PushlineWire
import Testing

@testable import PushlineCLI

@Suite("pushline dump and encode")
struct DumpCommandTests {
  static var card: TrackerCard {
    var card = TrackerCard(cardID: "earnings/daily", priority: 2.5, isValid: true)
    var daily = TrackerDailyEarningsCard(title: "Today")
    daily.total = Money(currencyCode: "USD", minorUnits: -1_250)
    daily.tripCount = 7
    card.payload = TrackerCardPayload()
    card.payload?.trackerDailyEarningsCard = daily
    card.cardType = .browse
    card.expiresAt = 1_763_830_800
    card.unknownFields = UnknownFields(bytes: [0xA0, 0x06, 0x07, 0xB2, 0x06, 0x02, 0x68, 0x69])
    return card
  }

  @Test func textFormShowsOneFieldPerLineNestedAndUnknownFieldsByNumber() throws {
    let text = try DumpCommand.render(Self.card.serializedBytes(), as: TrackerCard.self, json: false)
    #expect(text == """
      cardID: "earnings/daily"
      priority: 2.5
      isValid: true
      payload {
        trackerDailyEarningsCard {
          title: "Today"
          total {
            currencyCode: "USD"
            minorUnits: -1250
          }
          tripCount: 7
        }
      }
      cardType: BROWSE
      expiresAt: 1763830800
      100: VARINT 7    # unknown
      102: LEN <2 bytes> 68 69 "hi"    # unknown

      """)
  }

  /// The README's `dump --hex` example is what a newcomer types first: it must decode.
  @Test func theReadmesHexExampleDecodes() throws {
    let readme = try String(
      contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("README.md"), encoding: .utf8)
    let hex = try #require(readme.firstMatch(of: /pushline dump --type pushline\.tracker\.TrackerCard --hex ([0-9a-f]+)/)?.1)
    let bytes = try #require(Hex.decode(String(hex)))
    #expect(try DumpCommand.render(bytes, as: TrackerCard.self, json: false) == "cardID: \"a\"\npriority: 1.0\nisValid: true\n")
  }

  /// `--hex` that is not hex is refused as a usage error of `dump` saying what hex it takes —
  /// two characters that are not digits are no "odd number of digits".
  @Test(arguments: ["zz", "abc", "0a 0g"]) func hexThatIsNotHexIsAUsageError(text: String) {
    let error = #expect(throws: (any Error).self) { try DumpCommand.parse(["--type", "pushline.tracker.TrackerCard", "--hex", text]) }
    #expect(DumpCommand.message(for: error!).contains("expected hex digits (0-9, a-f), two to a byte"))
    #expect(DumpCommand.exitCode(for: error!) == .validationFailure)
  }

  @Test func jsonFormIsProtobufsCanonicalMapping() throws {
    let json = try DumpCommand.render(Self.card.serializedBytes(), as: TrackerCard.self, json: true)
    #expect(json == """
      {
        "cardID": "earnings/daily",
        "priority": 2.5,
        "isValid": true,
        "payload": {
          "trackerDailyEarningsCard": {
            "title": "Today",
            "total": {
              "currencyCode": "USD",
              "minorUnits": "-1250"
            },
            "tripCount": 7
          }
        },
        "cardType": "BROWSE",
        "expiresAt": "1763830800"
      }

      """)
  }

  /// dump --json, edit, encode: the loop gives back the same bytes (less unknown fields,
  /// which JSON cannot carry).
  @Test func encodeReadsWhatDumpJSONPrints() throws {
    var card = Self.card
    card.unknownFields = UnknownFields()
    let json = try DumpCommand.render(card.serializedBytes(), as: TrackerCard.self, json: true)
    #expect(try EncodeCommand.encode(json: json, as: TrackerCard.self) == card.serializedBytes())
    let edited = json.replacingOccurrences(of: "\"tripCount\": 7", with: "\"tripCount\": 8")
    let decoded = try TrackerCard(serializedBytes: try EncodeCommand.encode(json: edited, as: TrackerCard.self))
    #expect(decoded.payload?.trackerDailyEarningsCard?.tripCount == 8)
  }

  @Test func badBytesAreReportedWithTheirOffsetAndSurroundings() {
    let bytes = Array(Self.card.serializedBytes().prefix(30))
    #expect {
      try DumpCommand.render(bytes, as: TrackerCard.self, json: false)
    } throws: { error in
      "\(error)" == """
        pushline.tracker.TrackerCard: length out of range at byte 28 (length 21, 1 bytes left)
          bytes 20..<30: 00 00 00 04 40 18 01 22 [15] 12
        """
    }
  }

  @Test("encode names what is wrong in the JSON", arguments: [
    (#"{"cardID": "c", "priority": 1}"#, "pushline.tracker.TrackerCard: missing required field isValid"),
    (#"{"cardID": "c", "priority": 1, "isValid": true, "colour": 1}"#,
     #"pushline.tracker.TrackerCard: colour: pushline.tracker.TrackerCard has no field named "colour""#),
    (#"{"cardID": "c", "priority": 1, "isValid": true, "cardType": "SIDEWAYS"}"#,
     "pushline.tracker.TrackerCard: cardType: pushline.tracker.CardType has no value SIDEWAYS"),
    (#"{"cardID": "c", "priority": 1, "isValid": true, "expiresAt": "9223372036854775808"}"#,
     "pushline.tracker.TrackerCard: expiresAt: out of range for int64"),
    (#"{"cardID": "c", "priority": 1, "isValid": true, "payload": {"trackerRecentTripsCard": {}}}"#,
     "pushline.tracker.TrackerCard: payload.trackerRecentTripsCard: missing required field title"),
    (#"{"cardID": "c",, }"#, "pushline.tracker.TrackerCard: invalid JSON at byte 15: expected a member name"),
  ])
  func encodeErrors(json: String, message: String) {
    #expect {
      try EncodeCommand.encode(json: json, as: TrackerCard.self)
    } throws: { error in
      "\(error)" == message
    }
  }

  @Test func encodeAcceptsWhatProtobufJSONParsersAccept() throws {
    let json = #"""
      {"cardID": "c", "priority": "NaN", "isValid": true, "expiresAt": 17, "lastUpdatedAt": "1e3",
       "cardType": 2, "statusModePriority": null}
      """#
    let card = try TrackerCard(serializedBytes: try EncodeCommand.encode(json: json, as: TrackerCard.self))
    #expect(card.priority.isNaN)
    #expect(card.expiresAt == 17)
    #expect(card.lastUpdatedAt == 1_000)
    #expect(card.cardType == .bulletin)
    #expect(card.statusModePriority == nil)
  }

  @Test func bytesFieldsAreBase64() throws {
    var value = AnswerValue(dataType: .profilePhoto)
    value.blob = [0xFF, 0x00, 0xFE]
    let json = try DumpCommand.render(value.serializedBytes(), as: AnswerValue.self, json: true)
    #expect(json.contains(#""blob": "/wD+""#))
    #expect(try EncodeCommand.encode(json: json, as: AnswerValue.self) == value.serializedBytes())
    let urlSafe = #"{"dataType": "PROFILE_PHOTO", "blob": "_wD-"}"#
    #expect(try EncodeCommand.encode(json: urlSafe, as: AnswerValue.self) == value.serializedBytes())
  }
}
