import { describe, expect, it } from "@effect/vitest"
import { SseParser } from "../../src/target/Sse.js"

const parseAll = (chunks: ReadonlyArray<string>) => {
  const p = new SseParser()
  return [...chunks.flatMap((c) => p.feed(c)), ...p.end()]
}

describe("SseParser", () => {
  it("events end at a blank line; data lines join with \\n; comments, retry and unknown fields ignored", () => {
    expect(
      parseAll([": keep-alive\n\nevent: answer\nid: 7\nretry: 100\nfoo: bar\ndata: {\"a\":\ndata:  1}\n\ndata:x\n\n"])
    ).toEqual([
      { event: "answer", data: "{\"a\":\n 1}", id: "7" },
      { event: "message", data: "x", id: "7" }
    ])
  })

  it("the same events whatever the chunking and line endings (LF, CRLF, CR; CRLF split across chunks)", () => {
    const text = "data: one\r\n\r\ndata: two\rdata: more\r\rdata: three\n\n"
    const expected = [{ event: "message", data: "one" }, { event: "message", data: "two\nmore" }, {
      event: "message",
      data: "three"
    }]
    expect(parseAll([text])).toEqual(expected)
    expect(parseAll(text.split(""))).toEqual(expected)
    expect(parseAll(["data: one\r", "\n\r", "\ndata: two\r", "data: more\r", "\r", "data: three\n", "\n"])).toEqual(
      expected
    )
  })

  it("a field without a colon, an empty data line, and an event with only a name (not delivered)", () => {
    expect(parseAll(["data\n\nevent: ping\n\ndata:\ndata\n\n"])).toEqual([{ event: "message", data: "" }, {
      event: "message",
      data: "\n"
    }])
  })

  it("an event left open at the end of the stream is delivered (lenient), a half line too", () => {
    expect(parseAll(["data: {\"answer\": \"done\"}\n"])).toEqual([{ event: "message", data: "{\"answer\": \"done\"}" }])
    expect(parseAll(["data: {\"answer\": 1}"])).toEqual([{ event: "message", data: "{\"answer\": 1}" }])
    expect(parseAll([""])).toEqual([])
  })
})
