/**
 * The http retriever against a real local search endpoint (node:http on 127.0.0.1): success, the
 * body template, hit paths, threshold / top-k, timeout, bad JSON, non-2xx, a bad shape, an
 * unreachable endpoint and retries — every failure recorded on the case, never thrown.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import type { Scope } from "effect"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import type { EvalCase } from "../../src/domain/Case.js"
import {
  atPath,
  checkBody,
  defaultBody,
  make,
  readHits,
  recordedUrl,
  renderBody,
  splitCredentials
} from "../../src/retrieval/HttpRetriever.js"

interface Received {
  readonly path: string
  readonly body: unknown
  readonly headers: Http.IncomingHttpHeaders
}

type Handler = (path: string, body: unknown, res: Http.ServerResponse, count: number) => void

/** A search endpoint for the life of the scope. */
const searchServer = (
  handler: Handler
): Effect.Effect<{ readonly url: string; readonly received: Array<Received> }, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ url: string; received: Array<Received>; server: Http.Server }>((resolve) => {
        const received: Array<Received> = []
        const counts = new Map<string, number>()
        const server = Http.createServer((req, res) => {
          const chunks: Array<Buffer> = []
          req.on("data", (c: Buffer) => chunks.push(c))
          req.on("end", () => {
            const path = req.url ?? "/"
            let body: unknown
            try {
              body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
            } catch {
              body = Buffer.concat(chunks).toString("utf8")
            }
            received.push({ path, body, headers: req.headers })
            const n = (counts.get(path) ?? 0) + 1
            counts.set(path, n)
            handler(path, body, res, n)
          })
        })
        server.listen(0, "127.0.0.1", () => {
          const { port } = server.address() as AddressInfo
          resolve({ url: `http://127.0.0.1:${port}`, received, server })
        })
      })
    ),
    ({ server }) =>
      Effect.promise(() =>
        new Promise<void>((done) => {
          server.close(() => done())
          server.closeAllConnections()
        })
      )
  )

const json = (res: Http.ServerResponse, status: number, value: unknown) => {
  const text = typeof value === "string" ? value : JSON.stringify(value)
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
  res.end(text)
}

const okHits = {
  result: {
    hits: [
      { _id: "d1", _score: 0.91, fields: { chunk_text: "Paris is the capital of France." } },
      { _id: "d2", _score: 0.35, fields: { chunk_text: "Lyon is in France." } },
      { _id: "d3", _score: 0.72, fields: { chunk_text: "France is in Europe." } },
      { _id: "d4", _score: 0.66, fields: { chunk_text: "Paris has many museums." } }
    ]
  },
  timings: { retrieve: 12.5, rerank: 30 }
}

const handler: Handler = (path, _body, res, count) => {
  switch (path) {
    case "/search":
      return json(res, 200, okHits)
    case "/plain":
      return json(res, 200, {
        hits: [{ id: "a", text: "alpha", score: 2 }, { id: "a", text: "alpha again", score: 1 }, { text: "no id" }]
      })
    case "/hang":
      return // never answers
    case "/bad-json":
      return json(res, 200, "<html>oops</html>")
    case "/not-found":
      return json(res, 404, { error: "no such index" })
    case "/flaky":
      return count === 1
        ? json(res, 503, { error: "busy" })
        : json(res, 200, { hits: [{ id: "x", text: "recovered" }] })
    case "/down":
      return json(res, 500, { error: "always down" })
    case "/shape":
      return json(res, 200, { result: { hits: "none" } })
    case "/no-text":
      return json(res, 200, { hits: [{ id: "a", body: "wrong field" }] })
  }
  json(res, 404, {})
}

const aCase: EvalCase = {
  id: "q-1",
  ordinal: 0,
  line: 1,
  question: "What is the \"capital\" of France?",
  passages: [],
  source: { question: "What is the \"capital\" of France?", skill: "geography", nested: { x: 1 } }
}

describe("body template", () => {
  it("escapes values inside JSON strings and writes literals outside them; unset → null", () => {
    const body = renderBody(
      "{\"q\": \"{{query}}\", \"k\": {{topK}}, \"t\": {{scoreThreshold}}, \"raw\": {{query}}, \"pre\": \"find: {{query}}!\"}",
      { query: "a \"b\"\\\nc", topK: 5 }
    )
    expect(JSON.parse(body)).toEqual({
      q: "a \"b\"\\\nc",
      k: 5,
      t: null,
      raw: "a \"b\"\\\nc",
      pre: "find: a \"b\"\\\nc!"
    })
  })

  it("ignores escaped quotes when tracking strings", () => {
    expect(JSON.parse(renderBody("{\"a\": \"x\\\"{{query}}\", \"k\": {{topK}}}", { query: "q", topK: 3 }))).toEqual({
      a: "x\"q",
      k: 3
    })
  })

  it("the default template is valid; a broken one is refused with an example", () => {
    expect(Either.isRight(checkBody(defaultBody))).toBe(true)
    const bad = checkBody("{\"query\": {{query}")
    expect(Either.isLeft(bad) && bad.left).toMatch(/does not give valid JSON.*\{\{query\}\}/)
  })
})

describe("reading hits", () => {
  it("dot paths, including list indices and the root", () => {
    expect(atPath({ a: { b: [{ c: 1 }] } }, "a.b.0.c")).toBe(1)
    expect(atPath({ a: 1 }, "a.b")).toBeUndefined()
    expect(atPath([1], "")).toEqual([1])
  })

  it("default field names find Pinecone-style hits (_id, _score, fields.chunk_text) and the timings", () => {
    const r = readHits(okHits, { hitsPath: "result.hits", timingsPath: "timings" })
    expect(Either.isRight(r)).toBe(true)
    if (Either.isRight(r)) {
      expect(r.right.hits.map((h) => [h.id, h.rank, h.text, h.score])).toEqual([
        ["d1", 1, "Paris is the capital of France.", 0.91],
        ["d2", 2, "Lyon is in France.", 0.35],
        ["d3", 3, "France is in Europe.", 0.72],
        ["d4", 4, "Paris has many museums.", 0.66]
      ])
      expect(r.right.hits[0]!.fields).toEqual(okHits.result.hits[0])
      expect(r.right.timings).toEqual({ retrieve: 12.5, rerank: 30 })
    }
  })

  it("explicit field names; what is wrong with the shape", () => {
    const r = readHits({ docs: [{ key: 7, body: { t: "seven" }, s: 1 }] }, {
      hitsPath: "docs",
      idField: "key",
      textField: "body.t",
      scoreField: "s"
    })
    expect(Either.isRight(r) && r.right.hits[0]).toMatchObject({ id: "7", text: "seven", score: 1 })
    expect(readHits({ hits: {} }, {})).toEqual(Either.left("expected a list of hits at \"hits\", found an object"))
    expect(readHits({ hits: [1] }, {})).toEqual(Either.left("hit 1 is a number, expected an object"))
    expect(readHits({ hits: [{ id: "a" }] }, { textField: "body" })).toEqual(
      Either.left("hit 1 has no text at \"body\"")
    )
  })

  it("masks secrets in the recorded URL", () => {
    expect(recordedUrl("https://user:pw@search.example/v1?index=docs&api_key=s3cret")).toBe(
      "https://<redacted>@search.example/v1?index=docs&api_key=<redacted>"
    )
  })

  it("sends URL credentials as Basic authentication, to the URL without them", () => {
    // base64("us er:p@ss") = dXMgZXI6cEBzcw==
    expect(splitCredentials("http://us%20er:p%40ss@h:81/s?q=1")).toEqual({
      url: "http://h:81/s?q=1",
      authorization: "Basic dXMgZXI6cEBzcw=="
    })
    expect(splitCredentials("http://h/s")).toEqual({ url: "http://h/s" })
  })
})

describe("http retriever against a local endpoint", () => {
  it.scopedLive("POSTs the rendered body with the headers, reads the hits, applies threshold then top-k, records latency and spans", () =>
    Effect.gen(function*() {
      const server = yield* searchServer(handler)
      const retriever = make({
        url: `${server.url}/search`,
        body:
          "{\"query\": \"{{query}}\", \"top_k\": {{topK}}, \"skill\": \"{{skill}}\", \"rerank\": {{rerankTopN}}, \"prefetch\": {{prefetchLimit}}}",
        hitsPath: "result.hits",
        timingsPath: "timings",
        headers: { authorization: "Bearer t0ken" },
        params: { topK: 2, scoreThreshold: 0.5, rerankTopN: 20 }
      })
      const c = yield* retriever.retrieve(aCase)
      expect(server.received).toHaveLength(1)
      expect(server.received[0]!.body).toEqual({
        query: "What is the \"capital\" of France?",
        top_k: 2,
        skill: "geography",
        rerank: 20,
        prefetch: null
      })
      expect(server.received[0]!.headers.authorization).toBe("Bearer t0ken")
      expect(server.received[0]!.headers["content-type"]).toContain("application/json")
      // d2 (0.35) is below the threshold; of d1, d3, d4 the top 2 are kept, in the endpoint's order.
      expect(c.passages.map((p) => [p.id, p.rank])).toEqual([["d1", 1], ["d3", 2]])
      expect(c.retrieval).toMatchObject({
        retriever: "http",
        status: "ok",
        candidates: 4,
        belowThreshold: 1,
        beyondTopK: 1,
        spans: { retrieve: 12.5, rerank: 30 }
      })
      expect(c.retrieval?.latencyMs).toBeGreaterThanOrEqual(0)
      expect(retriever.params).toMatchObject({
        url: `${server.url}/search`,
        hitsPath: "result.hits",
        topK: 2,
        scoreThreshold: 0.5,
        rerankTopN: 20,
        timeoutMs: 30_000
      })
      expect(JSON.stringify(retriever.params)).not.toContain("t0ken")
    }))

  it.scopedLive("default body and top-k 10; repeated ids made unique; missing ids numbered; the measured time is the retrieve span", () =>
    Effect.gen(function*() {
      const server = yield* searchServer(handler)
      const c = yield* make({ url: `${server.url}/plain` }).retrieve(aCase)
      expect(server.received[0]!.body).toEqual({ query: aCase.question, top_k: 10 })
      expect(c.passages.map((p) => p.id)).toEqual(["a", "a~2", "3"])
      expect(Object.keys(c.retrieval?.spans ?? {})).toEqual(["retrieve"])
    }))

  it.scopedLive("timeout → the case has no passages and a timeout error; the run is not failed", () =>
    Effect.gen(function*() {
      const server = yield* searchServer(handler)
      const c = yield* make({ url: `${server.url}/hang`, timeoutMs: 200 }).retrieve(aCase)
      expect(c.passages).toEqual([])
      expect(c.retrieval).toMatchObject({ retriever: "http", status: "failed", error: { kind: "timeout" } })
      expect(c.retrieval?.error?.message).toContain("within 200 ms")
      expect(c.retrieval?.latencyMs).toBeGreaterThanOrEqual(150)
    }))

  it.scopedLive("bad JSON → a json error naming what came back", () =>
    Effect.gen(function*() {
      const server = yield* searchServer(handler)
      const c = yield* make({ url: `${server.url}/bad-json` }).retrieve(aCase)
      expect(c.retrieval).toMatchObject({ status: "failed", error: { kind: "json" } })
      expect(c.retrieval?.error?.message).toContain("\"<html>oops</html>\"")
    }))

  it.scopedLive("non-2xx → a status error with the code and the body; 4xx is not retried", () =>
    Effect.gen(function*() {
      const server = yield* searchServer(handler)
      const c = yield* make({ url: `${server.url}/not-found`, retries: 3 }).retrieve(aCase)
      expect(c.retrieval).toMatchObject({ status: "failed", error: { kind: "status", status: 404 } })
      expect(c.retrieval?.error?.message).toContain("HTTP 404")
      expect(c.retrieval?.error?.message).toContain("no such index")
      expect(server.received).toHaveLength(1)
    }))

  it.scopedLive("5xx is retried: a flaky endpoint recovers; an endpoint always down fails after the retries", () =>
    Effect.gen(function*() {
      const server = yield* searchServer(handler)
      const flaky = yield* make({ url: `${server.url}/flaky`, retries: 1 }).retrieve(aCase)
      expect(flaky.passages.map((p) => p.text)).toEqual(["recovered"])
      const down = yield* make({ url: `${server.url}/down`, retries: 2 }).retrieve(aCase)
      expect(down.retrieval).toMatchObject({ status: "failed", error: { kind: "status", status: 500 } })
      expect(server.received.filter((r) => r.path === "/down")).toHaveLength(3)
    }))

  it.scopedLive("JSON without hits where expected → a shape error", () =>
    Effect.gen(function*() {
      const server = yield* searchServer(handler)
      const wrongPath = yield* make({ url: `${server.url}/shape`, hitsPath: "result.hits" }).retrieve(aCase)
      expect(wrongPath.retrieval).toMatchObject({ status: "failed", error: { kind: "shape" } })
      expect(wrongPath.retrieval?.error?.message).toContain(
        "expected a list of hits at \"result.hits\", found a string"
      )
      const noText = yield* make({ url: `${server.url}/no-text` }).retrieve(aCase)
      expect(noText.retrieval?.error?.message).toContain("hit 1 has no text")
    }))

  it.live("an unreachable endpoint → a network error", () =>
    Effect.gen(function*() {
      // Port 9 (discard) on 127.0.0.1: nothing listens there, the connection is refused.
      const c = yield* make({ url: "http://127.0.0.1:9/search", retries: 0, timeoutMs: 2_000 }).retrieve(aCase)
      expect(c.passages).toEqual([])
      expect(c.retrieval).toMatchObject({ status: "failed", error: { kind: "network" } })
      expect(c.retrieval?.error?.message).toContain("cannot reach http://127.0.0.1:9/search")
    }))
})
