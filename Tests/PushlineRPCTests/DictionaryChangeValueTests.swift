import PushlineRPC
import Testing

@Suite("Dictionary.changeValue: a value changed in place")
struct DictionaryChangeValueTests {
  @Test func aStoredValueChangesAndAnAbsentOneStaysAbsent() {
    var counts = ["a": 1, "b": 2]
    let changed = counts.changeValue(forKey: "a") { value -> Int in
      value += 10
      return value
    }
    let absent = counts.changeValue(forKey: "z") { value -> Int in
      value += 10
      return value
    }
    #expect(changed == 11)
    #expect(absent == nil)
    #expect(counts == ["a": 11, "b": 2])
  }

  @Test func anAbsentValueStartsFromTheDefault() {
    var counts: [String: Int] = [:]
    counts.changeValue(forKey: "a", default: 5) { $0 += 1 }
    counts.changeValue(forKey: "a", default: 5) { $0 += 1 }
    #expect(counts == ["a": 7])
  }

  @Test func aValueThatHoldsABufferIsChangedWithoutCopyingIt() {
    var tables: [String: [Int]] = ["t": [1, 2, 3]]
    let before = tables["t"]!.withUnsafeBufferPointer { $0.baseAddress }
    tables.changeValue(forKey: "t") { $0[0] = 9 }
    #expect(tables["t"] == [9, 2, 3])
    #expect(tables["t"]!.withUnsafeBufferPointer { $0.baseAddress } == before)
  }

  @Test func aThrowingChangeStillLeavesTheValueStored() {
    struct Refused: Error {}
    var counts = ["a": 1]
    #expect(throws: Refused.self) {
      try counts.changeValue(forKey: "a") { (value: inout Int) throws(Refused) in
        value += 1
        throw Refused()
      }
    }
    #expect(counts == ["a": 2])
  }
}
