/**
 * compare's progress: `compareRunCases` tells which metric it is about to test (in order, with the
 * count and the paired cases) and each metric's result as its tests end, and the CLI's line for it says nothing for a comparison quicker than
 * `PROGRESS_AFTER_MS`.
 */
import * as Effect from "effect/Effect"
import { describe, expect, it } from "vitest"
import { PROGRESS_AFTER_MS, progressLine } from "../../src/cli/Compare.js"
import { compareRunCases } from "../../src/compare/Comparison.js"
import { caseRows, type RunCases } from "../../src/compare/RunCases.js"

const run = (dir: string, values: (i: number, metric: string) => number): RunCases => {
  const position = new Map(Array.from({ length: 40 }, (_, i) => [`c${i}`, i] as const))
  const metrics = ["f1", "recall", "precision"]
  return {
    run: {
      dir,
      runId: dir,
      pipeline: "answer-correctness",
      judge: "heuristic",
      input: undefined,
      status: "complete",
      iterations: [1]
    },
    cases: caseRows(position, metrics, values),
    metrics,
    specs: new Map(
      metrics.map((name) =>
        [name, { name, description: name, min: 0, max: 1, direction: "higher", unit: "fraction" }] as const
      )
    )
  }
}

describe("compare's progress", () => {
  it("compareRunCases tells each metric before its tests, in order, with the count and the paired cases", async () => {
    const told: Array<string> = []
    const a = run("a", (i) => (i % 10) / 10)
    const b = run("b", (i, metric) => ((i + (metric === "f1" ? 1 : 0)) % 10) / 10)
    const c = await Effect.runPromise(
      compareRunCases(a, b, {
        permutations: 99,
        resamples: 99,
        onMetric: (metric, index, total, cases) => Effect.sync(() => told.push(`${metric} ${index} ${total} ${cases}`))
      })
    )
    expect(told).toEqual(["f1 0 3 40", "recall 1 3 40", "precision 2 3 40"])
    expect(c.metrics.map((m) => m.metric)).toEqual(["f1", "recall", "precision"])
  })

  it("compareRunCases tells each metric's result as its tests end, between its start and the next one's", async () => {
    const told: Array<string> = []
    const a = run("a", (i) => (i % 10) / 10)
    const b = run("b", (i, metric) => ((i + (metric === "f1" ? 1 : 0)) % 10) / 10)
    const results: Array<unknown> = []
    const c = await Effect.runPromise(
      compareRunCases(a, b, {
        permutations: 99,
        resamples: 99,
        onMetric: (metric) => Effect.sync(() => told.push(`start ${metric}`)),
        onResult: (m) =>
          Effect.sync(() => {
            told.push(`done ${m.metric}`)
            results.push(m)
          })
      })
    )
    expect(told).toEqual(["start f1", "done f1", "start recall", "done recall", "start precision", "done precision"])
    expect(results).toEqual(c.metrics)
  })

  it("the CLI's line: none before PROGRESS_AFTER_MS, then the metric, its place, the cases and the time so far", () => {
    expect(PROGRESS_AFTER_MS).toBe(5_000)
    expect(progressLine("f1", 0, 8, 100_000, 4_999)).toBeUndefined()
    expect(progressLine("answer-correctness/f1", 2, 8, 1_000_000, 12_400)).toBe(
      "compare: testing answer-correctness/f1 (3 of 8) over 1,000,000 paired cases; 12 s so far"
    )
  })
})
