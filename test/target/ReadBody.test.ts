import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Fiber, Queue, Stream, TestClock } from "effect"
import { compilePaths } from "../../src/target/Answer.js"
import { readBody } from "../../src/target/TargetClient.js"

const paths = compilePaths({ answer: "$.answer", contexts: "$.sources[*].text" })
const bytes = (text: string) => new TextEncoder().encode(text)
const ms = (nanos: bigint | undefined) => (nanos === undefined ? undefined : Number(nanos / 1_000_000n))

/** A body fed by the test, chunk by chunk; `end` ends it (an empty chunk marks the end). */
const feed = Effect.gen(function*() {
  const queue = yield* Queue.unbounded<Uint8Array>()
  const body = Stream.fromQueue(queue).pipe(Stream.takeWhile((c) => c.length > 0))
  /** Offers a chunk and waits until the reader has taken it and run on to its next take. */
  const send = (chunk: string | Uint8Array) =>
    Effect.gen(function*() {
      yield* Queue.offer(queue, typeof chunk === "string" ? bytes(chunk) : chunk)
      while ((yield* Queue.size(queue)) > 0) yield* Effect.yieldNow()
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow()
    })
  return { body, send, end: Queue.offer(queue, new Uint8Array()) }
})

describe("readBody (TestClock)", () => {
  it.effect("a stream: TTFB is its first chunk's arrival, the end its last", () =>
    Effect.gen(function*() {
      const { body, send, end } = yield* feed
      const reading = yield* Effect.fork(readBody(paths, "text/event-stream; charset=utf-8", body))
      yield* TestClock.adjust("100 millis")
      yield* send("data: {\"delta\": \"Par\"}\n\n")
      yield* TestClock.adjust("400 millis")
      yield* send("data: {\"answer\": \"Paris.\", \"sources\": [{\"text\": \"s1\"}]}\n\ndata: [DONE]\n\n")
      yield* end
      const r = yield* Fiber.join(reading)
      expect(r.streamed).toBe(true)
      expect(ms(r.firstByteAt)).toBe(100)
      expect(ms(r.endedAt)).toBe(500)
      expect(Either.getOrThrow(r.reading)).toEqual({ answer: "Paris.", contexts: ["s1"], events: 3 })
    }))

  it.effect("JSON in chunks: first byte and end; a UTF-8 character split between chunks survives", () =>
    Effect.gen(function*() {
      const { body, send, end } = yield* feed
      const reading = yield* Effect.fork(readBody(paths, "application/json", body))
      const raw = bytes("{\"answer\": \"6CO₂ + 6H₂O\"}")
      const cut = raw.indexOf(0xe2) + 1 // inside the first "₂" (3 bytes: e2 82 82)
      yield* TestClock.adjust("30 millis")
      yield* send(raw.slice(0, cut))
      yield* TestClock.adjust("20 millis")
      yield* send(raw.slice(cut))
      yield* end
      const r = yield* Fiber.join(reading)
      expect(r.streamed).toBe(false)
      expect([ms(r.firstByteAt), ms(r.endedAt)]).toEqual([30, 50])
      expect(Either.getOrThrow(r.reading).answer).toBe("6CO₂ + 6H₂O")
    }))

  it.effect("an SSE event split mid-character and mid-line reads the same", () =>
    Effect.gen(function*() {
      const { body, send, end } = yield* feed
      const reading = yield* Effect.fork(readBody(paths, "text/event-stream", body))
      const raw = bytes("data: {\"answer\": \"H₂O\"}\n\n")
      const cut = raw.indexOf(0xe2) + 2
      yield* send(raw.slice(0, cut))
      yield* send(raw.slice(cut))
      yield* end
      expect(Either.getOrThrow((yield* Fiber.join(reading)).reading).answer).toBe("H₂O")
    }))

  it.effect("a body over the limit is refused (malformed), and the rest is not read", () =>
    Effect.gen(function*() {
      const pulled: Array<number> = []
      const body = Stream.fromIterable([1, 2, 3, 4]).pipe(
        Stream.rechunk(1),
        Stream.map((i) => {
          pulled.push(i)
          return bytes("x".repeat(10))
        })
      )
      const json = yield* readBody(paths, "application/json", body, 25)
      expect(Either.isLeft(json.reading) && json.reading.left).toEqual({
        kind: "malformed",
        detail: `the response is larger than ${25 / 1024 / 1024} MiB`
      })
      expect(pulled).toEqual([1, 2, 3])
      const sse = yield* readBody(
        paths,
        "text/event-stream",
        Stream.make(bytes("data: {\"a\": 1}\n\n"), bytes("data: {\"a\": 2}\n\n")),
        20
      )
      expect(Either.isLeft(sse.reading) && sse.reading.left.detail).toMatch(/^the event stream is larger than/)
    }))
})
