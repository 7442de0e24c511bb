import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Fiber, Schema, TestClock } from "effect"
import * as util from "node:util"
import { type TargetInput } from "../../src/target/Request.js"
import { withRetries } from "../../src/target/Retry.js"
import * as TargetClient from "../../src/target/TargetClient.js"
import { resolve, type TargetSettings } from "../../src/target/TargetConfig.js"
import { TargetError } from "../../src/target/TargetError.js"
import * as FakeRag from "../support/FakeRag.js"
import { freePort } from "../support/Ports.js"

const TOKEN = "rag-token-5f2c9a7e31"
const env = { RAG_TOKEN: TOKEN }
const question: TargetInput = { id: "q1", question: "What is a heat pump?" }

/** A client for these settings (the environment holds RAG_TOKEN), over the real node:http layer. */
const client = (settings: TargetSettings) =>
  resolve(settings).pipe(
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))),
    Effect.orDie,
    Effect.flatMap(TargetClient.make),
    Effect.provide(TargetClient.httpLayer)
  )

const failure = <A>(exit: Exit.Exit<A, TargetError>): TargetError => {
  if (Exit.isFailure(exit) && exit.cause._tag === "Fail") return exit.cause.error
  return expect.fail(`expected a TargetError, got ${String(exit)}`)
}

/** Nothing about a failure may show the token: its message, its JSON, its inspection. */
const expectNoSecret = (e: TargetError) => {
  for (const text of [e.message, JSON.stringify(e), util.inspect(e, { depth: 10 }), String(e)]) {
    expect(text).not.toContain(TOKEN)
  }
}

describe("TargetClient against a fake RAG service", () => {
  it.scopedLive("generic JSON: the answer and passages, the body and headers sent, the call measured", () =>
    Effect.gen(function*() {
      const fake = yield* FakeRag.make({ token: TOKEN })
      const target = yield* client({
        url: fake.url,
        headers: ["Authorization: Bearer ${RAG_TOKEN}", "X-Tenant: acme"],
        contexts: "$.sources[*].text"
      })
      const r = yield* target.call({ ...question, history: "User: hi\nAssistant: hello" })
      expect(r.answer).toBe("The answer to \"What is a heat pump?\" is in the handbook.")
      expect(r.contexts).toEqual([
        "Handbook, chapter 1: about What is a heat pump?",
        "Handbook, chapter 2: general notes."
      ])
      expect(r.streamed).toBe(false)
      expect(r.status).toBe(200)
      expect(r.latencyMs).toBeGreaterThan(0)
      expect(r.ttfbMs).toBeGreaterThan(0)
      expect(r.ttfbMs).toBeLessThanOrEqual(r.latencyMs)
      const sent = fake.requests[0]!
      expect(sent.path).toBe("/ask")
      expect(JSON.parse(sent.body)).toEqual({ question: "What is a heat pump?" })
      expect(sent.headers.authorization).toBe(`Bearer ${TOKEN}`)
      expect(sent.headers["x-tenant"]).toBe("acme")
      expect(sent.headers["content-type"]).toBe("application/json")
      expect(sent.headers.accept).toBe("application/json, text/event-stream")
      expect(sent.headers.traceparent).toBeUndefined()
      expect(sent.headers.b3).toBeUndefined()
      expect(fake.asked.get("What is a heat pump?")).toBe(1)
      expect(target.identity).not.toContain(TOKEN)
      // What the journal keeps: a response and a failure both go through their Schemas and back.
      expect(
        Schema.decodeUnknownSync(TargetClient.TargetResponse)(
          JSON.parse(JSON.stringify(Schema.encodeSync(TargetClient.TargetResponse)(r)))
        )
      ).toEqual(r)
    }))

  it.scopedLive("generic SSE: read to the end; the answer and passages of the final event; TTFB recorded", () =>
    Effect.gen(function*() {
      const fake = yield* FakeRag.make({ stream: "generic", streamGapMs: 5 })
      const target = yield* client({ url: fake.url, contexts: "$.sources[*].text" })
      const r = yield* target.call(question)
      expect(r.streamed).toBe(true)
      expect(r.answer).toBe("The answer to \"What is a heat pump?\" is in the handbook.")
      expect(r.contexts).toHaveLength(2)
      // a delta per word (12) + the final event + [DONE]
      expect(r.answer.split(" ")).toHaveLength(12)
      expect(r.events).toBe(14)
      expect(r.ttfbMs).toBeGreaterThan(0)
      expect(r.ttfbMs).toBeLessThanOrEqual(r.latencyMs)
    }))

  it.scopedLive("openai-chat preset: messages from history + question; streamed deltas concatenated; a JSON reply read too", () =>
    Effect.gen(function*() {
      const fake = yield* FakeRag.make()
      const streamed = yield* client({ url: fake.chatUrl, preset: "openai-chat", model: "rag-v2" })
      const r = yield* streamed.call({ id: "c1", question: "And now?", history: "User: Why?\nAssistant: Because." })
      expect(r.answer).toBe("The answer to \"And now?\" is in the handbook.")
      expect(r.streamed).toBe(true)
      expect(r.events).toBeGreaterThan(3)
      expect(JSON.parse(fake.requests[0]!.body)).toEqual({
        model: "rag-v2",
        messages: [{ role: "user", content: "Why?" }, { role: "assistant", content: "Because." }, {
          role: "user",
          content: "And now?"
        }],
        stream: true
      })
      const json = yield* client({ url: fake.chatUrl, preset: "openai-chat", body: "{\"messages\": {{messages}}}" })
      const j = yield* json.call({ id: "c2", question: "Plain?" })
      expect(j).toMatchObject({ answer: "The answer to \"Plain?\" is in the handbook.", streamed: false })
    }))

  it.scopedLive("credentials in the URL are sent as Basic auth and shown nowhere", () =>
    Effect.gen(function*() {
      const fake = yield* FakeRag.make({ script: ["server_error"] })
      const target = yield* client({ url: fake.url.replace("http://", `http://me:${TOKEN}@`) })
      const e = failure(yield* Effect.exit(target.call(question)))
      expect(fake.requests[0]!.headers.authorization).toBe(`Basic ${Buffer.from(`me:${TOKEN}`).toString("base64")}`)
      expect(e.target).toBe(fake.url.replace("http://", "http://<redacted>@"))
      expectNoSecret(e)
      expect(target.config.endpoint).not.toContain(TOKEN)
    }))
})

describe("TargetClient: every failure classified", () => {
  const cases: ReadonlyArray<
    {
      readonly reply: FakeRag.FakeRagReply
      readonly kind: TargetError["kind"]
      readonly status?: number
      readonly detail: RegExp
      readonly class: "retryable" | "fatal" | "case"
    }
  > = [
    {
      reply: "rate_limit",
      kind: "rate_limited",
      status: 429,
      detail: /too many requests \(Retry-After 2000 ms\)/,
      class: "retryable"
    },
    {
      reply: "server_error",
      kind: "server",
      status: 500,
      detail: /HTTP 500: \{"error":"internal error: the vector store timed out"\}/,
      class: "retryable"
    },
    { reply: "reset", kind: "network", detail: /the connection broke/, class: "retryable" },
    {
      reply: "reset_mid_body",
      kind: "network",
      detail: /the connection broke while reading the response/,
      class: "retryable"
    },
    { reply: "malformed", kind: "malformed", status: 200, detail: /the response is not JSON/, class: "case" },
    { reply: "html", kind: "malformed", status: 200, detail: /it starts with "<html>/, class: "case" },
    {
      reply: "missing_answer",
      kind: "shape",
      status: 200,
      detail: /^the response has no \$\.answer: it has keys answer_text, sources$/,
      class: "case"
    },
    { reply: "bad_request", kind: "rejected", status: 400, detail: /question too long/, class: "case" },
    {
      reply: "unauthorized",
      kind: "unauthorized",
      status: 401,
      detail: /wants credentials \(headers sent: Authorization\)/,
      class: "fatal"
    },
    { reply: "not_found", kind: "not_found", status: 404, detail: /nothing answers at this URL/, class: "fatal" }
  ]
  for (const c of cases) {
    it.scopedLive(`${c.reply} → ${c.kind} (${c.class})`, () =>
      Effect.gen(function*() {
        const fake = yield* FakeRag.make({ script: [c.reply], retryAfterSeconds: 2 })
        const target = yield* client({ url: fake.url, headers: ["Authorization: Bearer ${RAG_TOKEN}"] })
        const e = failure(yield* Effect.exit(target.call(question)))
        expect(e.kind).toBe(c.kind)
        expect(e.status).toBe(c.status)
        expect(e.detail).toMatch(c.detail)
        expect({ retryable: e.retryable, fatal: e.fatal, case: e.caseFailure }).toEqual({
          retryable: c.class === "retryable",
          fatal: c.class === "fatal",
          case: c.class === "case"
        })
        expect(e.message.startsWith(`target ${fake.url}: `)).toBe(true)
        if (c.reply === "rate_limit") expect(e.retryAfterMs).toBe(2000)
        const back = Schema.decodeUnknownSync(TargetError)(
          JSON.parse(JSON.stringify(Schema.encodeSync(TargetError)(e)))
        )
        expect(back.message).toBe(e.message)
        expectNoSecret(e)
      }))
  }

  it.scopedLive("a wrong token: one fatal line naming the target and the fix, without the token the service echoed", () =>
    Effect.gen(function*() {
      const fake = yield* FakeRag.make({ token: "the-right-token-123" })
      const target = yield* client({ url: fake.url, headers: ["Authorization: Bearer ${RAG_TOKEN}"] })
      const e = failure(yield* Effect.exit(target.call(question)))
      expect(fake.requests[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`)
      expect(JSON.parse(fake.requests[0]!.body)).toEqual({ question: question.question })
      expect(e.fatal).toBe(true)
      expect(e.message).toBe(
        `target ${fake.url}: unauthorized (HTTP 401): the service wants credentials (headers sent: Authorization): {"error":"invalid token","got":"<redacted>"} — check the credentials sent with --target-header (e.g. --target-header "Authorization: Bearer \${RAG_TOKEN}" with RAG_TOKEN set)`
      )
      expectNoSecret(e)
    }))

  it.scopedLive("no header at all: the 401 says so", () =>
    Effect.gen(function*() {
      const fake = yield* FakeRag.make({ token: TOKEN })
      const target = yield* client({ url: fake.url })
      expect(failure(yield* Effect.exit(target.call(question))).detail).toMatch(/\(no --target-header was given\)/)
    }))

  it.scopedLive("a wrong path (404), a redirect, connection refused: fatal", () =>
    Effect.gen(function*() {
      const fake = yield* FakeRag.make()
      const wrong = failure(yield* Effect.exit((yield* client({ url: `${fake.origin}/query` })).call(question)))
      expect(wrong).toMatchObject({ kind: "not_found", status: 404 })
      expect(wrong.message).toMatch(/— check the path in --target$/)
      const moved = failure(yield* Effect.exit((yield* client({ url: `${fake.origin}/moved` })).call(question)))
      expect(moved).toMatchObject({ kind: "moved", status: 301, detail: "HTTP 301: the service redirects to /ask" })
      const port = yield* Effect.promise(freePort)
      const refused = failure(
        yield* Effect.exit((yield* client({ url: `http://127.0.0.1:${port}/ask` })).call(question))
      )
      expect(refused).toMatchObject({
        kind: "unreachable",
        detail: "connection refused",
        target: `http://127.0.0.1:${port}/ask`
      })
      expect(refused.fatal).toBe(true)
      expect(refused.message).toBe(
        `target http://127.0.0.1:${port}/ask: unreachable: connection refused — check that the service is running and the host and port in --target`
      )
    }))

  it.scopedLive("an error event in a stream: a server failure, retryable", () =>
    Effect.gen(function*() {
      const fake = yield* FakeRag.make({ stream: "generic", script: ["stream_error"] })
      const e = failure(yield* Effect.exit((yield* client({ url: fake.url })).call(question)))
      expect(e).toMatchObject({
        kind: "server",
        status: 200,
        detail: "the stream sent an error at event 2: \"model overloaded\""
      })
      expect(e.retryable).toBe(true)
    }))
})

describe("TargetClient on the TestClock", () => {
  it.scoped("latency and TTFB are measured on Effect's Clock: a held answer released after 250 ms takes 250 ms", () =>
    Effect.gen(function*() {
      const fake = yield* FakeRag.make({ hold: true })
      const target = yield* client({ url: fake.url })
      const call = yield* Effect.fork(target.call(question))
      yield* Effect.promise(() => fake.received(1))
      yield* TestClock.adjust("250 millis")
      fake.release()
      const r = yield* Fiber.join(call)
      expect(r.latencyMs).toBe(250)
      expect(r.ttfbMs).toBe(250)
    }))

  it.scoped("no answer within the timeout: a timeout failure (retryable), the request abandoned", () =>
    Effect.gen(function*() {
      const fake = yield* FakeRag.make({ script: ["hang"] })
      const target = yield* client({ url: fake.url, timeoutMs: 30_000 })
      const call = yield* Effect.fork(Effect.exit(target.call(question)))
      yield* Effect.promise(() => fake.received(1))
      yield* TestClock.adjust("29 seconds")
      expect(call.unsafePoll()).toBeNull()
      yield* TestClock.adjust("1 second")
      const e = failure(yield* Fiber.join(call))
      expect(e).toMatchObject({ kind: "timeout", detail: "no complete answer within 30s (--target-timeout)" })
      expect(e.retryable).toBe(true)
    }))
})

describe("TargetClient with retries", () => {
  it.scopedLive("a 500 and a 429 are waited out and asked again; the answer comes on the third call", () =>
    Effect.gen(function*() {
      const fake = yield* FakeRag.make({ script: ["server_error", "rate_limit"], retryAfterSeconds: 0 })
      const target = yield* client({ url: fake.url })
      const r = yield* withRetries(target.call(question), { baseDelayMs: 1, maxDelayMs: 5 })
      expect(r.answer).toContain("heat pump")
      expect(fake.calls).toBe(3)
      expect(fake.replies).toEqual({ server_error: 1, rate_limit: 1, ok: 1 })
    }))

  it.scopedLive("a fatal or per-case failure is never asked again", () =>
    Effect.gen(function*() {
      const fake = yield* FakeRag.make({ script: ["missing_answer", "unauthorized"] })
      const target = yield* client({ url: fake.url })
      expect(failure(yield* Effect.exit(withRetries(target.call(question), { baseDelayMs: 1 }))).kind).toBe("shape")
      expect(failure(yield* Effect.exit(withRetries(target.call(question), { baseDelayMs: 1 }))).kind).toBe(
        "unauthorized"
      )
      expect(fake.calls).toBe(2)
    }))

  it.scopedLive("many questions at once: each asked exactly once", () =>
    Effect.gen(function*() {
      const fake = yield* FakeRag.make({ latencyMs: 5 })
      const target = yield* client({ url: fake.url })
      const inputs = Array.from({ length: 40 }, (_, i) => ({ id: `c${i}`, question: `Question number ${i}?` }))
      const answers = yield* Effect.forEach(inputs, (input) => target.call(input), { concurrency: 8 })
      expect(answers.map((a) => a.answer)).toEqual(
        inputs.map((i) => `The answer to "${i.question}" is in the handbook.`)
      )
      expect(fake.asked.size).toBe(40)
      expect([...fake.asked.values()].every((n) => n === 1)).toBe(true)
    }))
})

describe("an answer beyond a case's field bound (Limits.fieldBytes)", () => {
  it.scopedLive("an answer, or a passage, over 1 MiB is this case's failure (shape), not asked again", () =>
    Effect.gen(function*() {
      const big = "z".repeat(1024 * 1024 + 1)
      const fake = yield* FakeRag.make({
        answer: (q) => q === "long answer" ? { answer: big, sources: [] } : { answer: "short", sources: ["ok", big] }
      })
      const target = yield* client({ url: fake.url, contexts: "$.sources[*].text" })
      const answer = failure(yield* Effect.exit(withRetries(target.call({ id: "a", question: "long answer" }))))
      expect(answer).toMatchObject({
        kind: "shape",
        detail: "the answer is larger than 1 MiB, the most one field of a case may hold"
      })
      expect(answer.caseFailure).toBe(true)
      const passage = failure(yield* Effect.exit(target.call({ id: "b", question: "long passage" })))
      expect(passage.detail).toBe("passage 2 is larger than 1 MiB, the most one field of a case may hold")
      expect(fake.asked.get("long answer")).toBe(1)
    }))
})
