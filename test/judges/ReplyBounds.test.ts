/**
 * A judge's reply is read within `domain/Limits.ts`: a reply longer than `replyChars`, or an
 * extraction listing more than `claims` claims, is a failed judgment with the reason — at once, never
 * repaired (a repair would send the whole reply back) — on the synchronous path (here, through the
 * real SDK against the fake OpenAI server) as on `--batch`'s (the same `CallReader`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer } from "effect"
import type { JudgeTask } from "../../src/domain/Judgment.js"
import { Limits } from "../../src/domain/Limits.js"
import type { Rubric } from "../../src/domain/Rubric.js"
import * as CallReader from "../../src/judges/CallReader.js"
import { Judge } from "../../src/judges/Judge.js"
import * as LlmJudge from "../../src/judges/LlmJudge.js"
import * as OpenAiProvider from "../../src/providers/OpenAiProvider.js"
import * as RateGate from "../../src/providers/RateGate.js"
import * as FakeOpenAi from "../support/FakeOpenAi.js"

const base = {
  version: "1",
  description: "",
  heuristic: "support",
  confidence: false,
  evidence: false,
  itemKey: "hit",
  system: ["Extract."],
  user: ["<data name=\"text\">{{text}}</data>"],
  hash: "0123456789abcdef",
  min: 0,
  max: 3
} as const

const extract: Rubric = {
  ...base,
  id: "answer-correctness/extract",
  name: "Claims",
  scale: [],
  output: "claims",
  path: "answer-correctness/extract.json"
} as unknown as Rubric

const grade: Rubric = {
  ...base,
  id: "rag-answers/clarity",
  name: "Clarity",
  scale: [{ score: 0, label: "No", description: "" }, { score: 1, label: "Yes", description: "" }],
  output: "score",
  path: "rag-answers/clarity.json",
  max: 1
} as unknown as Rubric

const task = (rubric: Rubric): JudgeTask => ({
  pipeline: "answer-correctness",
  caseId: "c1",
  ordinal: 0,
  iteration: 1,
  rubric,
  target: "answer",
  vars: { text: "The tower is 330 metres tall. It was completed in 1889." }
})

/** A claim list, short claims (100,000 of them stay within the reply's length bound). */
const claims = (n: number) => JSON.stringify({ claims: Array.from({ length: n }, (_, i) => `c${i}`) })

describe("CallReader: the bounds", () => {
  it("an extraction of exactly `Limits.claims` claims is an answer; one more is final", () => {
    const reader = CallReader.pointReader(task(extract))
    expect(Either.isRight(reader.decode(claims(Limits.claims)))).toBe(true)
    expect(reader.decode(claims(Limits.claims + 1))).toEqual(Either.left({
      problem: "the reply lists 1,001 claims; an extraction may list at most 1,000 (not asked again)",
      final: true
    }))
  })

  it("a reply longer than `Limits.replyChars` is final, for every reader; an ordinary problem is not", () => {
    const long = `{"reasoning": "${"x".repeat(Limits.replyChars)}", "score": 1}`
    for (const reader of [CallReader.pointReader(task(extract)), CallReader.pointReader(task(grade))]) {
      const decoded = reader.decode(long)
      expect(Either.isLeft(decoded) && decoded.left).toMatchObject({ final: true })
      expect(Either.isLeft(decoded) && decoded.left.problem).toMatch(/^the reply is 1,000,0\d\d characters long/)
    }
    const list = CallReader.listReader({ ...task(grade), items: [{ target: "hit:1", vars: {} }] })
    expect(Either.isLeft(list.decode(long)) && Either.getLeft(list.decode(long))).toMatchObject({
      _tag: "Some",
      value: { final: true }
    })
    const ordinary = CallReader.pointReader(task(grade)).decode("{\"score\": 7}")
    expect(Either.isLeft(ordinary) && ordinary.left.final).toBeFalsy()
  })
})

describe("LlmJudge over HTTP: a reply beyond a bound is a failed judgment at once", () => {
  const judge = (fake: FakeOpenAi.FakeOpenAi) =>
    LlmJudge.layer({ preflight: false }).pipe(
      Layer.provide(Layer.merge(
        OpenAiProvider.layer({ provider: "openai-compatible", model: "m", baseURL: fake.url }),
        RateGate.layer({ concurrency: 2 })
      ))
    )

  it.scopedLive("100,000 claims: one paid call, the judgment failed with the reason (class judge, kept on resume)", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make({ answer: () => claims(100_000) })
      expect(claims(100_000).length).toBeLessThan(Limits.replyChars)
      const verdict = yield* Effect.flatMap(Judge, (j) => j.judge(task(extract))).pipe(Effect.provide(judge(fake)))
      expect(verdict).toMatchObject({
        status: "failed",
        failure: "judge",
        score: null,
        reason:
          "unusable answer after 1 try: the reply lists 100,000 claims; an extraction may list at most 1,000 (not asked again)"
      })
      expect(verdict.value).toBeUndefined()
      expect(verdict.raw?.length).toBeLessThanOrEqual(2000)
      expect(fake.calls).toBe(1)
    }))

  it.scopedLive("an ordinary unusable reply is still repaired (asked again with the problem)", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make({ script: ["malformed"] })
      const verdict = yield* Effect.flatMap(Judge, (j) => j.judge(task(grade))).pipe(Effect.provide(judge(fake)))
      expect(verdict.status).toBe("ok")
      expect(fake.calls).toBe(2)
    }))

  it.scopedLive("a server whose reply passes `Limits.responseBytes`: read no further, the judgment failed, not retried", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.make({
        answer: () => JSON.stringify({ reasoning: "y".repeat(Limits.responseBytes), score: 1 })
      })
      const verdict = yield* Effect.flatMap(Judge, (j) => j.judge(task(grade))).pipe(Effect.provide(judge(fake)))
      expect(verdict).toMatchObject({ status: "failed", failure: "judge" })
      expect(verdict.reason).toContain("the server's reply is larger than 32 MiB, the most a reply may hold")
      expect(fake.calls).toBe(1)
    }))
})
