/**
 * The engine's fold (`CaseFold.ts`), hand-computed: per declared metric over the cases that have it
 * n, mean, std, min, max and an interval; the lowest cases by one or several metrics (ties in input
 * order); the first failed cases and failed judgments, bounded.
 */
import { describe, expect, it } from "@effect/vitest"
import * as v8 from "node:v8"
import type { Judgment } from "../../src/domain/Judgment.js"
import * as Metric from "../../src/domain/Metric.js"
import { byNumber, Lowest, make, summarize } from "../../src/engine/CaseFold.js"
import { detailsChooser, type DetailsState } from "../../src/engine/Details.js"
import type { CaseValues } from "../../src/engine/Pipeline.js"
import { runInfo } from "../support/Retrieval.js"

const declared = [Metric.fraction("a", "a"), Metric.fraction("b", "b"), Metric.count("c", "c", "none")]

const values = (caseId: string, metrics: Record<string, number | null>, failed = false): CaseValues => ({
  caseId,
  line: Number(caseId.slice(1)) + 1,
  metrics,
  failed
})

const failedJudgment = (caseId: string, target: string): Judgment =>
  ({
    key: `${caseId}-${target}`,
    caseId,
    ordinal: 0,
    iteration: 1,
    criterion: "rubric/x",
    target,
    status: "failed",
    failure: "judge",
    score: null,
    reason: "not json",
    raw: "{nope",
    usage: { inputTokens: 0, outputTokens: 0 },
    provider: "fake",
    model: "fake",
    latencyMs: 0,
    attempts: 3
  }) as unknown as Judgment

describe("CaseFold", () => {
  it("per metric, over the cases that have it: n, mean, sample std, min, max (null values skipped, never 0)", () => {
    const fold = make<string>({ declared })
    fold.add("c0", values("c0", { a: 0.2, b: null, c: 3 }), [])
    fold.add("c1", values("c1", { a: 0.4, b: 1, c: 5 }), [])
    fold.add("c2", values("c2", { a: 0.9, b: null }), [])
    const s = fold.finish({ judgments: { ok: 5, failed: 1 }, tokens: { input: 10, output: 2 } }, { own: true })
    expect(s.cases).toBe(3)
    expect(s.metrics.a).toMatchObject({ name: "a", n: 3, min: 0.2, max: 0.9 })
    expect(s.metrics.a!.mean).toBeCloseTo(0.5, 15)
    // deviations −0.3, −0.1, 0.4: Σ² = 0.26, / (3 − 1) → std √0.13
    expect(s.metrics.a!.std).toBeCloseTo(Math.sqrt(0.13), 15)
    expect(s.metrics.b).toEqual({ name: "b", n: 1, mean: 1, std: 0, min: 1, max: 1, ci: null })
    expect(s.metrics.c).toMatchObject({ n: 2, mean: 4 })
    // The counts are the run's, as handed in; the kind's own part is passed through.
    expect(s.judgments).toEqual({ ok: 5, failed: 1 })
    expect(s.tokens).toEqual({ input: 10, output: 2 })
    expect(s.extra).toEqual({ own: true })
  })

  it("a metric no case has: n 0, every statistic null", () => {
    const fold = make<string>({ declared })
    fold.add("c0", values("c0", { a: null, b: null, c: null }), [])
    expect(fold.finish({ judgments: { ok: 0, failed: 0 }, tokens: { input: 0, output: 0 } }, undefined).metrics.a)
      .toEqual({ name: "a", n: 0, mean: null, std: null, min: null, max: null, ci: null })
  })

  it("95% interval of the mean: around the mean, within the values' range, the same on every fold", () => {
    const run = () => {
      const fold = make<number>({ declared })
      for (let i = 0; i < 200; i++) fold.add(i, values(`c${i}`, { a: (i * 37) % 100 / 100, b: i % 2, c: i }), [])
      return fold.finish({ judgments: { ok: 0, failed: 0 }, tokens: { input: 0, output: 0 } }, undefined)
    }
    const s = run()
    const a = s.metrics.a!
    expect(a.ci!.lower).toBeLessThan(a.mean!)
    expect(a.ci!.upper).toBeGreaterThan(a.mean!)
    expect(a.ci!.lower).toBeGreaterThanOrEqual(a.min!)
    expect(a.ci!.upper).toBeLessThanOrEqual(a.max!)
    // About ±1.96 standard errors: σ ≈ 0.29, n = 200 → half-width ≈ 0.04.
    expect(a.ci!.upper - a.ci!.lower).toBeGreaterThan(0.05)
    expect(a.ci!.upper - a.ci!.lower).toBeLessThan(0.11)
    expect(run().metrics).toEqual(s.metrics)
  })

  it("the lowest cases by one metric: known values only, ties in input order, failed cases apart", () => {
    const fold = make<string>({ declared, rankBy: ["a"], lowest: 3 })
    const data: ReadonlyArray<readonly [string, number | null, boolean]> = [
      ["c0", 0.5, false],
      ["c1", 0.1, false],
      ["c2", null, false],
      ["c3", 0.1, false],
      ["c4", 0.05, true],
      ["c5", 0.3, false],
      ["c6", 0.9, false]
    ]
    for (const [id, a, failed] of data) fold.add(id, values(id, { a, b: null }, failed), [])
    const s = fold.finish({ judgments: { ok: 0, failed: 0 }, tokens: { input: 0, output: 0 } }, undefined)
    expect(s.lowest).toEqual(["c1", "c3", "c5"])
    expect(s.failed).toEqual(["c4"])
    expect(s.failedCases).toBe(1)
  })

  it("the lowest by several metrics: ties on the first broken by the next", () => {
    const fold = make<string>({ declared, rankBy: ["a", "b"], lowest: 10 })
    fold.add("x", values("c0", { a: 0.5, b: 1 }), [])
    fold.add("y", values("c1", { a: 0.5, b: 0 }), [])
    fold.add("z", values("c2", { a: 0.2, b: 1 }), [])
    fold.add("w", values("c3", { a: 0.5, b: null }), [])
    expect(fold.finish({ judgments: { ok: 0, failed: 0 }, tokens: { input: 0, output: 0 } }, undefined).lowest)
      .toEqual(["z", "y", "x"])
  })

  it("no ranking metric: no lowest cases", () => {
    const fold = make<string>({ declared })
    fold.add("c0", values("c0", { a: 0.1 }), [])
    expect(fold.finish({ judgments: { ok: 0, failed: 0 }, tokens: { input: 0, output: 0 } }, undefined).lowest)
      .toEqual([])
  })

  it("the first failed cases and failed judgments are kept, every one is counted", () => {
    const fold = make<string>({ declared, failedCases: 2, failures: 3 })
    for (let i = 0; i < 5; i++) {
      fold.add(`c${i}`, values(`c${i}`, { a: null }, true), [
        failedJudgment(`c${i}`, "x"),
        failedJudgment(`c${i}`, "y")
      ])
    }
    const s = fold.finish({ judgments: { ok: 0, failed: 10 }, tokens: { input: 0, output: 0 } }, undefined)
    expect(s.failedCases).toBe(5)
    expect(s.failed).toEqual(["c0", "c1"])
    expect(s.failures).toEqual([
      { caseId: "c0", line: 1, criterion: "rubric/x", target: "x", reason: "not json", raw: "{nope" },
      { caseId: "c0", line: 1, criterion: "rubric/x", target: "y", reason: "not json", raw: "{nope" },
      { caseId: "c1", line: 2, criterion: "rubric/x", target: "x", reason: "not json", raw: "{nope" }
    ])
  })

  it("summarize: records folded as a run folds them, with the kind's own fold", () => {
    const info = runInfo([])
    const pipeline = {
      score: {
        score: () => 0,
        perCase: {
          declared: () => [Metric.fraction("v", "v")],
          of: (r: number): CaseValues => ({ caseId: `c${r}`, line: r, metrics: { v: r / 10 }, failed: false }),
          rank: { by: ["v"], keep: 2 }
        }
      },
      aggregate: {
        start: () => {
          let sum = 0
          return { add: (r: number) => void (sum += r), finish: () => ({ sum }) }
        }
      }
    }
    const s = summarize(pipeline, info, [3, 1, 2])
    expect(s.metrics.v!.mean).toBeCloseTo(0.2, 15)
    expect(s.lowest).toEqual([1, 2])
    expect(s.extra).toEqual({ sum: 6 })
  })
})

describe("Lowest", () => {
  it("keeps the smallest in bounded memory, ties in input order", () => {
    const lowest = new Lowest<number, string>(3, byNumber)
    for (let i = 0; i < 1000; i++) lowest.add((i * 7919) % 1000, i, `c${i}`)
    expect(lowest.result().map((x) => x.key)).toEqual([0, 1, 2])
    const ties = new Lowest<number, string>(2, byNumber)
    for (const [i, id] of ["a", "b", "c"].entries()) ties.add(1, i, id)
    expect(ties.result().map((x) => x.item)).toEqual(["a", "b"])
  })
})

describe("CaseFold saved and restored (a resume's snapshot, HeldRecords.ts)", () => {
  const roundTrip = <A>(value: A): A => v8.deserialize(v8.serialize(value)) as A
  const data = Array.from({ length: 500 }, (_, i) => {
    const failed = i % 97 === 13
    return {
      record: { id: `c${i}`, n: i },
      values: values(`c${i}`, { a: failed ? null : (i * 37) % 101 / 100, b: i % 3 === 0 ? null : i % 2, c: i }, failed),
      judgments: failed ? [failedJudgment(`c${i}`, "t")] : []
    }
  })
  const options = { declared, rankBy: ["a", "b"], lowest: 7, failedCases: 3, failures: 4 }
  const counts = { judgments: { ok: 9, failed: 2 }, tokens: { input: 0, output: 0 } }

  it("folding the rest after a restore gives the summary of one fold over every case, intervals bit for bit", () => {
    const whole = make<{ id: string; n: number }>(options)
    for (const d of data) whole.add(d.record, d.values, d.judgments)
    const expected = whole.finish(counts, "x")
    for (const at of [0, 1, 13, 14, 250, 499, 500]) {
      const first = make<{ id: string; n: number }>(options)
      for (const d of data.slice(0, at)) first.add(d.record, d.values, d.judgments)
      const second = make<{ id: string; n: number }>(options, roundTrip(first.save()))
      for (const d of data.slice(at)) second.add(d.record, d.values, d.judgments)
      const got = second.finish(counts, "x")
      expect(got, `restored after ${at} cases`).toEqual(expected)
      expect(JSON.stringify(got)).toBe(JSON.stringify(expected))
    }
  })

  it("a state saved is a copy: folding on does not change it; a state of other metrics is refused", () => {
    const fold = make<string>(options)
    fold.add("c0", values("c0", { a: 0.5, b: 1 }), [])
    const saved = fold.save()
    fold.add("c1", values("c1", { a: 0.1, b: 0 }), [])
    expect(saved.cases).toBe(1)
    expect(saved.running[0]!.n).toBe(1)
    expect(() => make<string>({ declared: declared.slice(0, 2) }, saved)).toThrow(/other metrics/)
  })
})

describe("the details chooser saved and restored", () => {
  it("chooses what one chooser over every case chooses", () => {
    const all = Array.from(
      { length: 300 },
      (_, i) => values(`c${i}`, { a: (i * 53) % 89 / 89, b: null }, i % 41 === 5)
    )
    const whole = detailsChooser(12, ["a"])
    for (const v of all) whole.add(v)
    const first = detailsChooser(12, ["a"])
    for (const v of all.slice(0, 120)) first.add(v)
    const second = detailsChooser(12, ["a"], v8.deserialize(v8.serialize(first.save())) as DetailsState)
    for (const v of all.slice(120)) second.add(v)
    expect(second.result()).toEqual(whole.result())
    expect([...second.result().ordinals!]).toEqual([...whole.result().ordinals!])
  })
})
