import { describe, expect, it } from "@effect/vitest"
import { Clock, Deferred, Effect, Either, Fiber, Layer, Redacted, TestClock } from "effect"
import type { JudgeTask } from "../../src/domain/Judgment.js"
import type { Rubric } from "../../src/domain/Rubric.js"
import * as CallReader from "../../src/judges/CallReader.js"
import { Judge } from "../../src/judges/Judge.js"
import * as LlmJudge from "../../src/judges/LlmJudge.js"
import { type ChatRequest, type ChatResponse, LlmProvider, ProviderError } from "../../src/providers/LlmProvider.js"
import * as OpenAiProvider from "../../src/providers/OpenAiProvider.js"
import * as RateGate from "../../src/providers/RateGate.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"

const rubric: Rubric = {
  id: "rag-answers/groundedness",
  version: "1",
  name: "Groundedness",
  description: "Is the answer supported by the passages?",
  scale: [
    { score: 0, label: "Unsupported", description: "Nothing is supported." },
    { score: 1, label: "Partly", description: "Some claims are supported." },
    { score: 2, label: "Mostly", description: "Most claims are supported." },
    { score: 3, label: "Fully", description: "Every claim is supported." }
  ],
  heuristic: "support",
  confidence: false,
  output: "score",
  evidence: false,
  itemKey: "hit",
  system: ["You grade {{criterion}}.", "{{scale}}"],
  user: ["<data name=\"question\">{{question}}</data>", "<data name=\"answer\">{{answer}}</data>"],
  hash: "0123456789abcdef",
  path: "rag-answers/groundedness.json",
  min: 0,
  max: 3
}

const task = (caseId = "c1"): JudgeTask => ({
  pipeline: "rag-answers",
  caseId,
  ordinal: 0,
  iteration: 1,
  rubric,
  target: "answer",
  vars: { question: "What is the capital of France?", answer: "Paris." }
})

const okText = JSON.stringify({ reasoning: "supported", score: 2 })
const ok = (text = okText): ChatResponse => ({ text, usage: { inputTokens: 10, outputTokens: 5 } })

/** A scripted in-memory provider: `reply(n, request)` answers the n-th call (1-based). */
const stubProvider = (reply: (n: number, request: ChatRequest) => Effect.Effect<ChatResponse, ProviderError>) => {
  const calls: Array<{ readonly at: number; readonly request: ChatRequest }> = []
  const layer = Layer.succeed(LlmProvider, {
    provider: "stub",
    model: "stub-model",
    params: { temperature: 0, seed: 1 },
    host: "127.0.0.1:9921",
    keySource: "--api-key or OPENAI_API_KEY",
    complete: (request) =>
      Effect.flatMap(Clock.currentTimeMillis, (at) => {
        calls.push({ at, request })
        return reply(calls.length, request)
      })
  })
  return { calls, layer }
}

const judgeWith = (
  provider: Layer.Layer<LlmProvider>,
  options: LlmJudge.LlmJudgeOptions = {},
  gate: RateGate.RateGateOptions = {}
) => LlmJudge.layer(options).pipe(Layer.provide(Layer.merge(provider, RateGate.layer(gate))))

describe("LlmJudge decoding", () => {
  it("takes the last schema-valid object: an example in the prose before the answer is not the answer", () => {
    const examples = [
      "For example {\"reasoning\": \"an example\", \"score\": 0} would mean nothing is supported. My answer: {\"reasoning\": \"every claim is in the passage\", \"score\": 3}",
      "Format: ```json\n{\"reasoning\": \"…\", \"score\": 0}\n```\nVerdict:\n```json\n{\"reasoning\": \"every claim is in the passage\", \"score\": 3}\n```",
      // An object that is not an answer after the answer does not replace it; a brace inside a string is not a brace.
      "{\"reasoning\": \"every claim is in the passage\", \"score\": 3} (schema: {\"type\": \"object\"}, {\"note\": \"a } b\"})",
      "I considered {\"reasoning\": \"x\", \"score\": 9} (off the scale) then {\"reasoning\": \"every claim is in the passage\", \"score\": 3}"
    ]
    for (const text of examples) {
      expect(CallReader.decodeAnswer(rubric, text)).toEqual(
        Either.right({ reasoning: "every claim is in the passage", score: 3 })
      )
    }
    // When nothing is valid, the error is the last object's.
    expect(
      CallReader.decodeAnswer(rubric, "{\"score\": 1, \"reasoning\": 2} then {\"reasoning\": \"r\", \"score\": 7}")
    ).toEqual(
      Either.left(expect.stringContaining("score 7 is not on the scale"))
    )
  })

  it("extracts the JSON object from fences and prose", () => {
    expect(CallReader.extractJsonObject(okText)).toEqual({ reasoning: "supported", score: 2 })
    expect(CallReader.extractJsonObject("Here:\n```json\n{\"score\": 1, \"reasoning\": \"x\"}\n```\nDone.")).toEqual({
      score: 1,
      reasoning: "x"
    })
    expect(CallReader.extractJsonObject("I think {\"reasoning\": \"a } in a string\", \"score\": 3} is right"))
      .toEqual({ reasoning: "a } in a string", score: 3 })
    expect(CallReader.extractJsonObject("{not json} then {\"score\": 0, \"reasoning\": \"r\"}")).toEqual({
      score: 0,
      reasoning: "r"
    })
    expect(CallReader.extractJsonObject("{\"score\": ")).toBeUndefined()
    expect(CallReader.extractJsonObject("no json here")).toBeUndefined()
  })

  it("decodes only scores on the scale", () => {
    expect(CallReader.decodeAnswer(rubric, okText)).toEqual(Either.right({ reasoning: "supported", score: 2 }))
    expect(CallReader.decodeAnswer(rubric, "{\"reasoning\": \"r\", \"score\": \"3\", \"confidence\": 4}")).toEqual(
      Either.right({ reasoning: "r", score: 3, confidence: 4 })
    )
    const outOfScale = CallReader.decodeAnswer(rubric, "{\"reasoning\": \"r\", \"score\": 5}")
    expect(Either.isLeft(outOfScale) && outOfScale.left).toContain("not on the scale (0, 1, 2, 3)")
    const noReasoning = CallReader.decodeAnswer(rubric, "{\"score\": 1}")
    expect(Either.isLeft(noReasoning) && noReasoning.left).toContain("reasoning")
    const badConfidence = CallReader.decodeAnswer(rubric, "{\"reasoning\": \"r\", \"score\": 1, \"confidence\": 9}")
    expect(Either.isLeft(badConfidence)).toBe(true)
    expect(CallReader.decodeAnswer(rubric, "  ")).toEqual(Either.left("the reply was empty"))
  })
})

const fail = (
  kind: ProviderError["kind"],
  extra: Partial<{ status: number; retryAfterMs: number; detail: string }> = {}
) =>
  Effect.fail(
    new ProviderError({
      kind,
      detail: extra.detail ?? kind,
      ...(extra.status === undefined ? {} : { status: extra.status }),
      ...(extra.retryAfterMs === undefined ? {} : { retryAfterMs: extra.retryAfterMs })
    })
  )

describe("LlmJudge retries on TestClock", () => {
  it.effect("a 429 pauses every worker until Retry-After; the waiting calls then restart spread over a second", () => {
    const stub = stubProvider((n) =>
      n === 1
        ? Effect.zipRight(
          Effect.sleep("50 millis"),
          fail("rate_limited", { status: 429, retryAfterMs: 10_000, detail: "slow down" })
        )
        : Effect.as(Effect.sleep("100 millis"), ok())
    )
    return Effect.gen(function*() {
      const judge = yield* Judge
      const fiber = yield* Effect.fork(
        Effect.forEach(Array.from({ length: 16 }, (_, i) => task(`c${i}`)), judge.judge, { concurrency: 16 })
      )
      yield* TestClock.adjust("10049 millis")
      // 8 calls started at once (concurrency 8); one got a 429 at 50 ms and nobody started since.
      expect(stub.calls.map((c) => c.at)).toEqual(Array(8).fill(0))
      for (let i = 0; i < 30; i++) yield* TestClock.adjust("100 millis")
      const verdicts = yield* Fiber.join(fiber)
      expect(stub.calls.length).toBe(17)
      const restarts = stub.calls.slice(8).map((c) => c.at)
      expect(restarts.every((t) => t >= 10_050 && t <= 11_050 + 100)).toBe(true)
      expect(new Set(restarts).size).toBeGreaterThan(3)
      expect(verdicts.every((v) => v.status === "ok" && v.score === 2)).toBe(true)
      expect(verdicts[0]!.attempts).toBe(2)
    }).pipe(Effect.provide(judgeWith(stub.layer, {}, { concurrency: 8, adaptive: false })))
  })

  it.effect("429s are never failures: they do not count against --max-retries", () => {
    const stub = stubProvider((n) =>
      n <= 20 ? fail("rate_limited", { status: 429, retryAfterMs: 1_000 }) : Effect.succeed(ok())
    )
    return Effect.gen(function*() {
      const fiber = yield* Effect.fork((yield* Judge).judge(task()))
      // Each 429 pauses 1 s, then a restart within the jitter window (up to another second).
      for (let i = 0; i < 500; i++) yield* TestClock.adjust("100 millis")
      const verdict = yield* Fiber.join(fiber)
      expect(verdict).toMatchObject({ status: "ok", score: 2, attempts: 21 })
    }).pipe(Effect.provide(judgeWith(stub.layer, { maxRetries: 0 })))
  })

  it.effect("a judgment rate-limited for longer than --max-wait fails as a transport failure (asked again on resume)", () => {
    const stub = stubProvider(() => fail("rate_limited", { status: 429, detail: "slow down" }))
    return Effect.gen(function*() {
      const judge = yield* Judge
      const gate = yield* RateGate.RateGate
      const fiber = yield* Effect.fork(judge.judge(task()))
      yield* TestClock.adjust("1 millis")
      // No Retry-After: the gate pauses a second anyway.
      expect((yield* gate.stats).pausedUntil).toBe(1_000)
      for (let i = 0; i < 14; i++) yield* TestClock.adjust("5 seconds")
      const verdict = yield* Fiber.join(fiber)
      expect(verdict).toMatchObject({ status: "failed", failure: "transport", score: null })
      expect(verdict.reason).toContain("still rate-limited after waiting")
      expect(verdict.reason).toContain("--max-wait 1 min")
    }).pipe(
      Effect.provide(
        LlmJudge.layer({ maxRetries: 1, maxWaitMs: 60_000 }).pipe(
          Layer.provideMerge(Layer.merge(stub.layer, RateGate.layer({ maxPauseMs: 60_000 })))
        )
      )
    )
  })

  it.effect("--max-wait bounds each judgment's own wait: twelve judgments behind a 1-hour Retry-After with --max-wait 20 s all end by ~20 s", () => {
    const stub = stubProvider(() => fail("rate_limited", { status: 429, retryAfterMs: 3_600_000, detail: "slow down" }))
    return Effect.gen(function*() {
      const judge = yield* Judge
      const ended: Array<number> = []
      const fiber = yield* Effect.fork(Effect.forEach(
        Array.from({ length: 12 }, (_, i) => task(`c${i}`)),
        (t) =>
          Effect.tap(
            judge.judge(t),
            () => Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => ended.push(now)))
          ),
        { concurrency: 12 }
      ))
      yield* TestClock.adjust("21 seconds")
      const verdicts = yield* Fiber.join(fiber)
      expect(verdicts.every((v) => v.status === "failed" && v.failure === "transport")).toBe(true)
      expect(verdicts.every((v) => v.reason?.includes("--max-wait 20 s") === true)).toBe(true)
      // Every one counted from when it first met the 429 or its pause (~0 s), not one after another.
      expect(ended.length).toBe(12)
      expect(Math.max(...ended)).toBeLessThanOrEqual(21_000)
      // The first four were sent (4 in flight); the rest never: each one's wait ran out in the gate.
      expect(stub.calls.length).toBeLessThanOrEqual(8)
    }).pipe(
      Effect.provide(
        LlmJudge.layer({ maxRetries: 1, maxWaitMs: 20_000 }).pipe(
          Layer.provideMerge(Layer.merge(stub.layer, RateGate.layer({ concurrency: 4, maxPauseMs: 20_000 })))
        )
      )
    )
  })

  it.effect("server errors back off exponentially with jitter, then fail as a transport failure", () => {
    const stub = stubProvider(() => fail("server", { status: 503, detail: "overloaded" }))
    return Effect.gen(function*() {
      const judge = yield* Judge
      const fiber = yield* Effect.fork(judge.judge(task()))
      // Small steps: one large adjust can run a woken retry after the clock has already moved on.
      for (let i = 0; i < 100; i++) yield* TestClock.adjust("100 millis")
      const verdict = yield* Fiber.join(fiber)
      const at = stub.calls.map((c) => c.at)
      expect(at.length).toBe(4)
      const delays = at.slice(1).map((t, i) => t - at[i]!)
      expect(delays[0]).toBeGreaterThanOrEqual(400)
      expect(delays[0]).toBeLessThanOrEqual(600)
      expect(delays[1]).toBeGreaterThanOrEqual(800)
      expect(delays[1]).toBeLessThanOrEqual(1_200)
      expect(delays[2]).toBeGreaterThanOrEqual(1_600)
      expect(delays[2]).toBeLessThanOrEqual(2_400)
      expect(verdict).toMatchObject({ status: "failed", failure: "transport", score: null, attempts: 4 })
      expect(verdict.reason).toContain("server (HTTP 503): overloaded")
    }).pipe(Effect.provide(judgeWith(stub.layer, { maxRetries: 3 })))
  })

  it.effect("backoff is capped", () => {
    const stub = stubProvider((n) => n <= 3 ? fail("network", { detail: "ECONNRESET" }) : Effect.succeed(ok()))
    return Effect.gen(function*() {
      const judge = yield* Judge
      const fiber = yield* Effect.fork(judge.judge(task()))
      for (let i = 0; i < 100; i++) yield* TestClock.adjust("100 millis")
      const verdict = yield* Fiber.join(fiber)
      const at = stub.calls.map((c) => c.at)
      // Jittered delays are fractional: allow float rounding in the differences of absolute times.
      expect(at.slice(1).map((t, i) => t - at[i]!).every((d) => d <= 1_500 + 1e-6)).toBe(true)
      expect(verdict).toMatchObject({ status: "ok", score: 2, attempts: 4 })
    }).pipe(Effect.provide(judgeWith(stub.layer, { maxRetries: 3, baseDelayMs: 1_000, maxDelayMs: 1_500 })))
  })

  it.effect("a rejected request (a 4xx about this request) fails at once, kept as a judge failure", () => {
    const stub = stubProvider(() => fail("rejected", { status: 400, detail: "maximum context length is 8192 tokens" }))
    return Effect.gen(function*() {
      const verdict = yield* (yield* Judge).judge(task())
      expect(verdict).toMatchObject({ status: "failed", failure: "judge", score: null, attempts: 1 })
      expect(verdict.reason).toContain("rejected (HTTP 400): maximum context length")
    }).pipe(Effect.provide(judgeWith(stub.layer)))
  })

  it.effect("the first Ctrl+C ends a backoff at once: the judgment is not made (JudgeStopped), nothing to journal", () => {
    const stub = stubProvider(() => fail("server", { status: 503 }))
    return Effect.gen(function*() {
      const stop = yield* Deferred.make<void>()
      const result = yield* Effect.gen(function*() {
        const fiber = yield* Effect.fork(Effect.either((yield* Judge).judge(task())))
        yield* TestClock.adjust("1 millis")
        expect(stub.calls.length).toBe(1)
        yield* Deferred.succeed(stop, undefined)
        yield* TestClock.adjust("1 millis")
        return yield* Fiber.join(fiber)
      }).pipe(Effect.provide(
        LlmJudge.layer({ maxRetries: 5, baseDelayMs: 60_000, stop: Deferred.await(stop) }).pipe(
          Layer.provideMerge(Layer.merge(stub.layer, RateGate.layer({ stop: Deferred.await(stop) })))
        )
      ))
      expect(Either.isLeft(result) && result.left._tag).toBe("JudgeStopped")
      expect(stub.calls.length).toBe(1)
    })
  })
})

describe("LlmJudge: a misconfigured provider stops the run", () => {
  it.effect("a 401 before anything was answered is fatal at once, with one line naming provider, host, status and fix", () => {
    const stub = stubProvider(() => fail("unauthorized", { status: 401, detail: "Incorrect API key provided" }))
    return Effect.gen(function*() {
      const judge = yield* Judge
      const gate = yield* RateGate.RateGate
      const result = yield* Effect.either(judge.judge(task()))
      expect(Either.isLeft(result) && result.left).toMatchObject({
        _tag: "FatalJudgeError",
        kind: "unauthorized",
        line: "stub at 127.0.0.1:9921 rejected the API key (HTTP 401): check --api-key or OPENAI_API_KEY"
      })
      expect(stub.calls.length).toBe(1)
      // The gate starts nothing more.
      const next = yield* Effect.either(gate.run(1, Effect.succeed(ok())))
      expect(Either.isLeft(next) && next.left._tag).toBe("GateStopped")
    }).pipe(Effect.provide(LlmJudge.layer().pipe(Layer.provideMerge(Layer.merge(stub.layer, RateGate.layer())))))
  })

  it.effect("after calls were answered, one fatal-class error is retried (a flaky gateway); three in a row stop the run", () => {
    const stub = stubProvider((n) =>
      n === 1
        ? Effect.succeed(ok())
        : n === 2
        ? fail("not_found", { status: 404, detail: "Not found" })
        : n === 3
        ? Effect.succeed(ok())
        : fail("not_found", { status: 404, detail: "The model `stub-model` does not exist" })
    )
    return Effect.gen(function*() {
      const judge = yield* Judge
      expect(yield* judge.judge(task("a"))).toMatchObject({ status: "ok" })
      const fiber = yield* Effect.fork(Effect.either(judge.judge(task("b"))))
      for (let i = 0; i < 50; i++) yield* TestClock.adjust("100 millis")
      // The lone 404 was retried and answered.
      expect(yield* Fiber.join(fiber)).toMatchObject({ _tag: "Right", right: { status: "ok", attempts: 2 } })
      const last = yield* Effect.fork(Effect.either(judge.judge(task("c"))))
      for (let i = 0; i < 100; i++) yield* TestClock.adjust("100 millis")
      const result = yield* Fiber.join(last)
      expect(Either.isLeft(result) && result.left).toMatchObject({
        _tag: "FatalJudgeError",
        line: expect.stringContaining("does not serve model \"stub-model\" (HTTP 404")
      })
      expect(stub.calls.length).toBe(6)
    }).pipe(Effect.provide(judgeWith(stub.layer, { maxRetries: 5, fatalAfter: 3 })))
  })

  it.effect("unreachable: `cannot reach <provider> at <host> (connection refused): …`", () => {
    const stub = stubProvider(() => fail("unreachable", { detail: "connection refused" }))
    return Effect.gen(function*() {
      const result = yield* Effect.either((yield* Judge).judge(task()))
      expect(Either.isLeft(result) && result.left.message).toBe(
        "cannot reach stub at 127.0.0.1:9921 (connection refused): is the server running? check --base-url"
      )
    }).pipe(Effect.provide(judgeWith(stub.layer)))
  })
})

describe("LlmJudge over HTTP (fake OpenAI server)", () => {
  const judgeOver = (fake: FakeOpenAi.FakeOpenAi, options: LlmJudge.LlmJudgeOptions = {}, timeoutMs = 5_000) =>
    judgeWith(
      Layer.orDie(OpenAiProvider.layer({
        provider: "openai-compatible",
        model: "judge-model",
        baseURL: fake.url,
        timeoutMs,
        params: { temperature: 0, seed: 42, maxTokens: 300 }
      })),
      { baseDelayMs: 10, ...options }
    )

  it.scopedLive("judges end to end with the default fake answer", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make()
      const verdict = yield* Effect.flatMap(Judge, (judge) =>
        Effect.gen(function*() {
          expect(judge.label).toBe("openai-compatible judge-model")
          expect(judge.params).toEqual({ temperature: 0, seed: 42, maxTokens: 300 })
          expect(judge.traits).toEqual({ runsLocally: false, deterministic: false, languageModel: true })
          return yield* judge.judge(task())
        })).pipe(Effect.provide(judgeOver(fake)))
      expect(verdict).toMatchObject({ status: "ok", score: 3, attempts: 1 })
      expect(verdict.usage.inputTokens).toBeGreaterThan(0)
      expect(verdict.usage.outputTokens).toBeGreaterThan(0)
      const body = fake.requests[0]!.body
      expect(body.seed).toBe(42)
      expect(body.temperature).toBe(0)
      expect(body.response_format?.json_schema?.strict).toBe(true)
    }))

  it.scopedLive("429 with Retry-After, then success", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make({ script: ["rate_limit"], retryAfterSeconds: 1 })
      const started = Date.now()
      const verdict = yield* Effect.flatMap(Judge, (j) => j.judge(task())).pipe(Effect.provide(judgeOver(fake)))
      expect(Date.now() - started).toBeGreaterThanOrEqual(950)
      expect(verdict).toMatchObject({ status: "ok", score: 3, attempts: 2 })
      expect(fake.calls).toBe(2)
    }))

  it.scopedLive("500, then success after a backoff", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make({ script: ["server_error", "server_error"] })
      const verdict = yield* Effect.flatMap(Judge, (j) => j.judge(task())).pipe(Effect.provide(judgeOver(fake)))
      expect(verdict).toMatchObject({ status: "ok", score: 3, attempts: 3 })
    }))

  it.scopedLive("malformed JSON, then repaired", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make({ script: ["malformed"] })
      const verdict = yield* Effect.flatMap(Judge, (j) => j.judge(task())).pipe(Effect.provide(judgeOver(fake)))
      expect(verdict).toMatchObject({ status: "ok", score: 3, attempts: 2 })
      const messages = fake.requests[1]!.body.messages!
      expect(messages.length).toBe(4)
      expect(messages[2]).toEqual({ role: "assistant", content: expect.stringContaining("Sure! Here is my verdict") })
      expect(messages[3]!.content).toContain(
        "Your previous reply could not be used: the reply contains no valid JSON object"
      )
    }))

  it.scopedLive("an example object in the prose before the real answer: scored from the answer (3), not the example (0)", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make({
        answer: () =>
          "Scores look like this, for example {\"reasoning\": \"an example\", \"score\": 0}. My answer: {\"reasoning\": \"all supported\", \"score\": 3}"
      })
      const verdict = yield* Effect.flatMap(Judge, (j) => j.judge(task())).pipe(Effect.provide(judgeOver(fake)))
      expect(verdict).toMatchObject({ status: "ok", score: 3, reason: "all supported", attempts: 1 })
    }))

  it.scopedLive("a fenced answer with prose around it is used as is", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make({
        answer: () => "Let me think.\n```json\n{\"reasoning\": \"fine\", \"score\": 1}\n```\nHope that helps!"
      })
      const verdict = yield* Effect.flatMap(Judge, (j) => j.judge(task())).pipe(Effect.provide(judgeOver(fake)))
      expect(verdict).toMatchObject({ status: "ok", score: 1, reason: "fine", attempts: 1 })
    }))

  it.scopedLive("always malformed → failed verdict with the raw text, never a score", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make({ faults: { malformed: 1 } })
      const verdict = yield* Effect.flatMap(Judge, (j) => j.judge(task())).pipe(
        Effect.provide(judgeOver(fake, { repairAttempts: 2 }))
      )
      expect(verdict).toMatchObject({ status: "failed", score: null, attempts: 3 })
      expect(verdict.reason).toContain("unusable answer after 3 tries")
      expect(verdict.raw).toContain("Sure! Here is my verdict")
      expect(fake.calls).toBe(3)
    }))

  it.scopedLive("an out-of-scale score is a decode error", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make({ answer: () => JSON.stringify({ reasoning: "great", score: 10 }) })
      const verdict = yield* Effect.flatMap(Judge, (j) => j.judge(task())).pipe(
        Effect.provide(judgeOver(fake, { repairAttempts: 1 }))
      )
      expect(verdict).toMatchObject({ status: "failed", score: null, attempts: 2 })
      expect(verdict.reason).toContain("not on the scale")
      expect(verdict.raw).toBe(JSON.stringify({ reasoning: "great", score: 10 }))
    }))

  it.scopedLive("hang → timeout → retried → failed with a timeout reason", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make({ faults: { hang: 1 } })
      const verdict = yield* Effect.flatMap(Judge, (j) => j.judge(task())).pipe(
        Effect.provide(judgeOver(fake, { maxRetries: 1 }, 150))
      )
      expect(verdict).toMatchObject({ status: "failed", score: null, attempts: 2 })
      expect(verdict.reason).toContain("timeout")
      expect(fake.calls).toBe(2)
    }))

  it.scopedLive("400 → failed without retry", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make({ faults: { bad_request: 1 } })
      const verdict = yield* Effect.flatMap(Judge, (j) => j.judge(task())).pipe(Effect.provide(judgeOver(fake)))
      expect(verdict).toMatchObject({ status: "failed", score: null, attempts: 1 })
      expect(verdict.reason).toContain("rejected (HTTP 400)")
      expect(fake.calls).toBe(1)
    }))

  it.scopedLive("preflight: one tiny request; json_schema when the server takes it", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make()
      const report = yield* Effect.flatMap(Judge, (j) => j.preflight!).pipe(Effect.provide(judgeOver(fake)))
      expect(report.structuredOutput).toBe("json_schema")
      expect(report.inputTokens).toBeGreaterThan(0)
      expect(fake.calls).toBe(1)
      expect(fake.requests[0]!.body.response_format?.type).toBe("json_schema")
    }))

  for (const [accepted, expected] of [["json_object", "json_object"], ["none", "prompt"]] as const) {
    it.scopedLive(`preflight: a server that rejects json_schema${accepted === "none" ? " and json_object" : ""} → answers in ${expected} mode, and judging uses it`, () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.make({ structuredOutput: accepted })
        const [report, verdict] = yield* Effect.flatMap(Judge, (j) => Effect.all([j.preflight!, j.judge(task())])).pipe(
          Effect.provide(judgeOver(fake))
        )
        expect(report.structuredOutput).toBe(expected)
        expect(verdict).toMatchObject({ status: "ok", score: 3 })
        const last = fake.requests[fake.requests.length - 1]!.body
        expect(last.response_format?.type).toBe(expected === "prompt" ? undefined : "json_object")
        expect(String(last.messages![0]!.content)).toContain(OpenAiProvider.SCHEMA_MARKER)
      }))
  }

  it.scopedLive("preflight: a rejected key or an unknown model is fatal at once (one call each, no retry), before any judgment", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make({ apiKey: "right", models: ["judge-model"] })
      const wrongKey = yield* Effect.flip(
        Effect.flatMap(Judge, (j) => j.preflight!).pipe(Effect.provide(judgeOver(fake)))
      )
      expect(wrongKey).toMatchObject({ _tag: "FatalJudgeError", kind: "unauthorized" })
      expect(wrongKey.message).toBe(
        `openai-compatible at ${
          fake.url.replace("http://", "").replace("/v1", "")
        } rejected the API key (HTTP 401): check --api-key or OPENAI_API_KEY`
      )
      const wrongModel = yield* Effect.flip(
        Effect.flatMap(Judge, (j) => j.preflight!).pipe(Effect.provide(judgeWith(
          Layer.orDie(
            OpenAiProvider.layer({
              provider: "openai-compatible",
              model: "gpt-9",
              baseURL: fake.url,
              apiKey: Redacted.make("right")
            })
          )
        )))
      )
      expect(wrongModel.message).toContain("does not serve model \"gpt-9\" (HTTP 404")
      expect(wrongModel.message).toContain("check --model")
      expect(fake.calls).toBe(2)
    }))

  it.scopedLive("preflight waits out a rate limit like any call", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make({ script: ["rate_limit"], retryAfterMs: 100 })
      const report = yield* Effect.flatMap(Judge, (j) => j.preflight!).pipe(Effect.provide(judgeOver(fake)))
      expect(report.structuredOutput).toBe("json_schema")
      expect(fake.calls).toBe(2)
    }))

  it.scopedLive("many concurrent judgments over keep-alive connections", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make({ record: false, latencyMs: 2 })
      const verdicts = yield* Effect.flatMap(Judge, (j) =>
        Effect.forEach(Array.from({ length: 200 }, (_, i) => task(`c${i}`)), j.judge, { concurrency: 32 })).pipe(
          Effect.provide(judgeWith(
            Layer.orDie(OpenAiProvider.layer({ provider: "openai-compatible", model: "m", baseURL: fake.url })),
            {},
            { concurrency: 32 }
          ))
        )
      expect(verdicts.every((v) =>
        v.status === "ok" && v.score === 3
      )).toBe(true)
      expect(fake.calls).toBe(200)
    }))
})
