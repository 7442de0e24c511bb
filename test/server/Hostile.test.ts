/**
 * `rag-eval serve` with hostile clients, over real HTTP: malformed values in every field of the
 * request shape answer 400 with the path (never 500), too many hits answer 413, and one large
 * request cannot starve a small one of judge calls (the fake LLM at 20 ms a call).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as FakeOpenAi from "../support/FakeOpenAi.js"
import { expectError, fakeJudge, post, type Reply, type SearchReply, serve, specExample } from "./support.js"

const search = (url: string) => `${url}/v1/eval/search`
const batch = (url: string) => `${url}/v1/eval/search:batch`

/** `{"a":{"a":…}}`, `depth` objects deep. */
const nestedObject = (depth: number): unknown => JSON.parse("{\"a\":".repeat(depth) + "1" + "}".repeat(depth))

/** Values that do not belong in the field they are put in, as JSON text (too deep for JSON.stringify to write). */
const hostileValues: ReadonlyArray<[string, string]> = [
  ["an object", "{\"x\": 1}"],
  ["an array", "[1, \"two\", {\"three\": 3}]"],
  ["a number", "42"],
  ["a negative float", "-1.5e308"],
  ["a huge number", "1e400"],
  ["null", "null"],
  ["true", "true"],
  ["an empty string", "\"\""],
  ["a 200 KB string", JSON.stringify("x".repeat(200_000))],
  ["a deeply nested object", "{\"a\":".repeat(50_000) + "1" + "}".repeat(50_000)],
  ["a deeply nested array", "[".repeat(50_000) + "]".repeat(50_000)]
]

const HOLE = "__hostile_value__"
/** The request with `value` (JSON text) where the shape has the placeholder. */
const withValue = (shape: unknown, value: string) => JSON.stringify(shape).replace(JSON.stringify(HOLE), () => value)

/** Paths of the request shape, and how to put a value there. */
const paths: ReadonlyArray<[string, (v: unknown) => unknown]> = [
  ["(body)", (v) => v],
  ["id", (v) => ({ ...specExample, id: v })],
  ["query", (v) => ({ ...specExample, query: v })],
  ["query.inputs", (v) => ({ ...specExample, query: { inputs: v } })],
  ["query.inputs.text", (v) => ({ ...specExample, query: { inputs: { text: v } } })],
  ["query.extra", (v) => ({ ...specExample, query: { ...specExample.query, extra: v } })],
  ["eval", (v) => ({ ...specExample, eval: v })],
  ["eval.fields", (v) => ({ ...specExample, eval: { fields: v } })],
  ["eval.fields[0]", (v) => ({ ...specExample, eval: { fields: [v] } })],
  ["eval.debug", (v) => ({ ...specExample, eval: { debug: v } })],
  ["eval.k", (v) => ({ ...specExample, eval: { k: v } })],
  ["eval.gain", (v) => ({ ...specExample, eval: { gain: v } })],
  ["hits", (v) => ({ ...specExample, hits: v })],
  ["hits[3]", (v) => ({ ...specExample, hits: [...specExample.hits.slice(0, 3), v] })],
  ["hits[3].id", (v) => ({ ...specExample, hits: [...specExample.hits.slice(0, 3), { id: v, text: "t" }] })],
  ["hits[3].text", (v) => ({ ...specExample, hits: [...specExample.hits.slice(0, 3), { id: "d", text: v }] })],
  [
    "hits[3].title",
    (v) => ({ ...specExample, hits: [...specExample.hits.slice(0, 3), { id: "d", text: "t", title: v }] })
  ]
]

const batchPaths: ReadonlyArray<[string, (v: unknown) => unknown]> = [
  ["requests", (v) => ({ requests: v })],
  ["requests[1]", (v) => ({ requests: [specExample, v] })],
  ["requests[1].hits[3].text", (v) => ({ requests: [specExample, paths.find(([p]) => p === "hits[3].text")![1](v)] })],
  ["requests[1].hits[3].title", (v) => ({ requests: [specExample, paths.find(([p]) => p === "hits[3].title")![1](v)] })]
]

/** A 400 names the path; anything else that is not a 200 or a 413 is a failure of this test. */
const expectHandled = (reply: Reply, where: string) => {
  if (reply.status === 200) return
  expect(reply.status, `${where}: ${reply.text.slice(0, 300)}`).not.toBe(500)
  expect([400, 413], `${where}: ${reply.text.slice(0, 300)}`).toContain(reply.status)
}

describe("malformed fields never answer 500", () => {
  it.scopedLive(
    "every field of a search request, every kind of wrong value: 200, 400 or 413, never 500",
    () =>
      Effect.gen(function*() {
        const server = yield* serve({ maxBodyBytes: 4 * 1024 * 1024 })
        for (const [path, put] of paths) {
          for (const [kind, value] of hostileValues) {
            expectHandled(yield* post(search(server.url), withValue(put(HOLE), value)), `${path} = ${kind}`)
          }
        }
        for (const [path, put] of batchPaths) {
          for (const [kind, value] of hostileValues) {
            expectHandled(yield* post(batch(server.url), withValue(put(HOLE), value)), `${path} = ${kind}`)
          }
        }
      }),
    120_000
  )

  it.scopedLive("a nested hit field answers 400 naming its path", () =>
    Effect.gen(function*() {
      const server = yield* serve()
      const deep = yield* post(search(server.url), {
        ...specExample,
        hits: [...specExample.hits.slice(0, 3), { id: "d", text: "t", extra: nestedObject(100) }]
      })
      const error = expectError(deep, 400, "invalid_request")
      expect(error.problems[0]!.path).toBe("hits[3].extra")
      expect(error.problems[0]!.message).toMatch(/nested deeper than 64/)
      const text = yield* post(search(server.url), {
        ...specExample,
        hits: [...specExample.hits.slice(0, 3), { id: "d", text: { not: "a string" } }]
      })
      const textError = expectError(text, 400, "invalid_request")
      expect(textError.problems).toContainEqual({ path: "hits[3].text", message: "expected a string" })
      expect(textError.message).toContain("hits[3].text: expected a string")
    }))
})

describe("--max-hits", () => {
  const hits = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `h${i}`, text: `passage ${i} about paris` }))

  it.scopedLive("a request with more hits than --max-hits answers 413 in the one error shape; at the limit it is judged", () =>
    Effect.gen(function*() {
      const server = yield* serve({ maxHits: 5 })
      const over = expectError(yield* post(search(server.url), { ...specExample, hits: hits(6) }), 413, "too_many_hits")
      expect(over.message).toContain("6 hits")
      expect(over.message).toContain("--max-hits")
      expect(over.problems[0]!.path).toBe("hits")
      expect((yield* post(search(server.url), { ...specExample, hits: hits(5) })).status).toBe(200)
    }))

  it.scopedLive("a batch counts the hits of all its requests", () =>
    Effect.gen(function*() {
      const server = yield* serve({ maxHits: 5 })
      const request = (n: number) => ({ ...specExample, hits: hits(n) })
      expectError(yield* post(batch(server.url), { requests: [request(3), request(3)] }), 413, "too_many_hits")
      expect((yield* post(batch(server.url), { requests: [request(3), request(2)] })).status).toBe(200)
    }))

  it.scopedLive("the default is 1,000", () =>
    Effect.gen(function*() {
      const server = yield* serve({ maxBodyBytes: 4 * 1024 * 1024 })
      expectError(yield* post(search(server.url), { ...specExample, hits: hits(1_001) }), 413, "too_many_hits")
      expect((yield* post(search(server.url), { ...specExample, hits: hits(1_000) })).status).toBe(200)
    }), 60_000)
})

describe("fair judge calls between requests", () => {
  it.scopedLive(
    "a 1-hit request is judged at the next free slot while a 400-hit request holds the LLM judge (20 ms a call)",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.make({ latencyMs: 20 })
        const server = yield* serve({ judge: fakeJudge(fake, { concurrency: 8 }), concurrency: 8, cacheDir: false })
        const big = {
          query: { inputs: { text: "capital of france" } },
          hits: Array.from({ length: 400 }, (_, i) => ({ id: `b${i}`, text: `passage number ${i}` }))
        }
        const bigReply = yield* Effect.fork(post(search(server.url), big))
        // Wait until the big request holds the judge.
        while (fake.calls < 16) yield* Effect.sleep("5 millis")
        const small = yield* post(search(server.url), {
          query: { inputs: { text: "capital of france" } },
          hits: [{ id: "s", text: "Paris is the capital of France." }]
        })
        expect(small.status).toBe(200)
        expect((small.body as SearchReply).hits).toHaveLength(1)
        const bigDone = yield* bigReply.await
        expect(bigDone._tag).toBe("Success")
        // Told by the order the LLM was called in, not by times on a clock the machine's load moves:
        // first come, first served would have judged the small one after all 400; it went before most.
        const order = fake.judgeRequests.map((r) =>
          JSON.stringify(r.body.messages).includes("Paris is the capital of France.")
        )
        expect(order.filter((isSmall) => isSmall)).toHaveLength(1)
        expect(order.length - 1 - order.indexOf(true)).toBeGreaterThan(200)
      }),
    60_000
  )
})
