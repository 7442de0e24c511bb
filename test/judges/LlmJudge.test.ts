import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect, Either, Fiber, Layer, Schedule, TestClock } from "effect"
import type { JudgeTask } from "../../src/domain/Judgment.js"
import type { Rubric } from "../../src/domain/Rubric.js"
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
      expect(LlmJudge.decodeAnswer(rubric, text)).toEqual(Either.right({ reasoning: "every claim is in the passage", score: 3 }))
    }
    // When nothing is valid, the error is the last object's.
    expect(LlmJudge.decodeAnswer(rubric, "{\"score\": 1, \"reasoning\": 2} then {\"reasoning\": \"r\", \"score\": 7}")).toEqual(
      Either.left(expect.stringContaining("score 7 is not on the scale"))
    )
  })

  it("extracts the JSON object from fences and prose", () => {
    expect(LlmJudge.extractJsonObject(okText)).toEqual({ reasoning: "supported", score: 2 })
    expect(LlmJudge.extractJsonObject("Here:\n```json\n{\"score\": 1, \"reasoning\": \"x\"}\n```\nDone.")).toEqual({
      score: 1,
      reasoning: "x"
    })
    expect(LlmJudge.extractJsonObject("I think {\"reasoning\": \"a } in a string\", \"score\": 3} is right"))
      .toEqual({ reasoning: "a } in a string", score: 3 })
    expect(LlmJudge.extractJsonObject("{not json} then {\"score\": 0, \"reasoning\": \"r\"}")).toEqual({
      score: 0,
      reasoning: "r"
    })
    expect(LlmJudge.extractJsonObject("{\"score\": ")).toBeUndefined()
    expect(LlmJudge.extractJsonObject("no json here")).toBeUndefined()
  })

  it("decodes only scores on the scale", () => {
    expect(LlmJudge.decodeAnswer(rubric, okText)).toEqual(Either.right({ reasoning: "supported", score: 2 }))
    expect(LlmJudge.decodeAnswer(rubric, "{\"reasoning\": \"r\", \"score\": \"3\", \"confidence\": 4}")).toEqual(
      Either.right({ reasoning: "r", score: 3, confidence: 4 })
    )
    const outOfScale = LlmJudge.decodeAnswer(rubric, "{\"reasoning\": \"r\", \"score\": 5}")
    expect(Either.isLeft(outOfScale) && outOfScale.left).toContain("not on the scale (0, 1, 2, 3)")
    const noReasoning = LlmJudge.decodeAnswer(rubric, "{\"score\": 1}")
    expect(Either.isLeft(noReasoning) && noReasoning.left).toContain("reasoning")
    const badConfidence = LlmJudge.decodeAnswer(rubric, "{\"reasoning\": \"r\", \"score\": 1, \"confidence\": 9}")
    expect(Either.isLeft(badConfidence)).toBe(true)
    expect(LlmJudge.decodeAnswer(rubric, "  ")).toEqual(Either.left("the reply was empty"))
  })
})

describe("LlmJudge retries on TestClock", () => {
  it.effect("a 429 pauses every worker until Retry-After, then all resume", () => {
    const stub = stubProvider((n) =>
      n === 1
        ? Effect.zipRight(
          Effect.sleep("50 millis"),
          Effect.fail(new ProviderError({ kind: "rate_limited", status: 429, retryAfterMs: 10_000, detail: "slow down" }))
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
      yield* TestClock.adjust("1 millis")
      expect(stub.calls.length).toBe(16)
      yield* TestClock.adjust("1 second")
      const verdicts = yield* Fiber.join(fiber)
      expect(stub.calls.length).toBe(17)
      expect(stub.calls.slice(8).every((c) => c.at >= 10_050)).toBe(true)
      expect(verdicts.every((v) => v.status === "ok" && v.score === 2)).toBe(true)
      expect(verdicts[0]!.attempts).toBe(2)
    }).pipe(Effect.provide(judgeWith(stub.layer, {}, { concurrency: 8 })))
  })

  it.effect("server errors back off exponentially with jitter, then fail with the error", () => {
    const stub = stubProvider(() => Effect.fail(new ProviderError({ kind: "server", status: 503, detail: "overloaded" })))
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
      expect(verdict).toMatchObject({ status: "failed", score: null, attempts: 4 })
      expect(verdict.reason).toContain("server (HTTP 503): overloaded")
    }).pipe(Effect.provide(judgeWith(stub.layer, { maxRetries: 3 })))
  })

  it.effect("backoff is capped", () => {
    const stub = stubProvider((n) =>
      n <= 3 ? Effect.fail(new ProviderError({ kind: "network", detail: "ECONNRESET" })) : Effect.succeed(ok())
    )
    return Effect.gen(function*() {
      const judge = yield* Judge
      const fiber = yield* Effect.fork(judge.judge(task()))
      // Small steps: one large adjust can run a woken retry after the clock has already moved on.
      for (let i = 0; i < 100; i++) yield* TestClock.adjust("100 millis")
      const verdict = yield* Fiber.join(fiber)
      const at = stub.calls.map((c) => c.at)
      // Jittered delays are fractional: allow float rounding in the differences of absolute times.
      expect(at.slice(1).map((t, i) => t - at[i]!).every((d) => d <= 1_500 + 1e-6)).toBe(true)
      expect(verdict).toMatchObject({ status: "ok", score: 2, attempts: 4 })
    }).pipe(Effect.provide(judgeWith(stub.layer, { maxRetries: 3, baseDelayMs: 1_000, maxDelayMs: 1_500 })))
  })

  it.effect("429s have their own larger budget, and a 429 without Retry-After still pauses", () => {
    const stub = stubProvider(() => Effect.fail(new ProviderError({ kind: "rate_limited", status: 429, detail: "slow down" })))
    return Effect.gen(function*() {
      const judge = yield* Judge
      const gate = yield* RateGate.RateGate
      const fiber = yield* Effect.fork(judge.judge(task()))
      yield* TestClock.adjust("1 millis")
      expect((yield* gate.stats).pausedUntil).toBeGreaterThanOrEqual(400)
      yield* TestClock.adjust("5 minutes")
      const verdict = yield* Fiber.join(fiber)
      // maxRetries 1 → 3 retries after 429s: 4 attempts.
      expect(verdict).toMatchObject({ status: "failed", score: null, attempts: 4 })
      expect(verdict.reason).toContain("rate_limited")
    }).pipe(
      Effect.provide(
        LlmJudge.layer({ maxRetries: 1 }).pipe(Layer.provideMerge(Layer.merge(stub.layer, RateGate.layer())))
      )
    )
  })

  it.effect("a rejected request is not retried", () => {
    const stub = stubProvider(() => Effect.fail(new ProviderError({ kind: "rejected", status: 400, detail: "bad model" })))
    return Effect.gen(function*() {
      const verdict = yield* (yield* Judge).judge(task())
      expect(verdict).toMatchObject({ status: "failed", score: null, attempts: 1 })
      expect(verdict.reason).toContain("rejected (HTTP 400): bad model")
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
          expect(judge.local).toBe(false)
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
      expect(messages[3]!.content).toContain("Your previous reply could not be used: the reply contains no valid JSON object")
    }))

  it.scopedLive("an example object in the prose before the real answer: scored from the answer (3), not the example (0)", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make({
        answer: () => "Scores look like this, for example {\"reasoning\": \"an example\", \"score\": 0}. My answer: {\"reasoning\": \"all supported\", \"score\": 3}"
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
      expect(verdicts.every((v) => v.status === "ok" && v.score === 3)).toBe(true)
      expect(fake.calls).toBe(200)
    }))
})

describe("retryAfterFailure", () => {
  /** An effect failing `failures` times (with the attempt number), then succeeding; attempts are timed. */
  const flaky = (failures: number) => {
    const at: Array<number> = []
    const effect = Effect.flatMap(Clock.currentTimeMillis, (now) => {
      at.push(now)
      return at.length <= failures ? Effect.fail(at.length) : Effect.succeed("done")
    })
    return { effect, at }
  }
  const schedule = Schedule.exponential("100 millis").pipe(Schedule.intersect(Schedule.recurs(3)))

  for (const failures of [0, 1, 3, 4]) {
    it.effect(`behaves as Effect.retry with ${failures} failure(s): same attempts, same delays, same outcome`, () =>
      Effect.gen(function*() {
        const ours = flaky(failures)
        const theirs = flaky(failures)
        const a = yield* Effect.fork(Effect.either(LlmJudge.retryAfterFailure(ours.effect, schedule)))
        const b = yield* Effect.fork(Effect.either(Effect.retry(theirs.effect, schedule)))
        yield* TestClock.adjust(10_000)
        const [ra, rb] = [yield* Fiber.join(a), yield* Fiber.join(b)]
        expect(ra).toEqual(rb)
        expect(ours.at).toEqual(theirs.at)
        expect(ours.at).toHaveLength(Math.min(failures, 4) + (failures <= 3 ? 1 : 0))
      }))
  }

  it.effect("the schedule's first input is the first failure", () =>
    Effect.gen(function*() {
      const seen: Array<number> = []
      const recordInputs = Schedule.recurs(5).pipe(Schedule.tapInput((e: number) => Effect.sync(() => void seen.push(e))))
      const { effect } = flaky(2)
      expect(yield* LlmJudge.retryAfterFailure(effect, recordInputs)).toBe("done")
      expect(seen).toEqual([1, 2])
    }))
})
