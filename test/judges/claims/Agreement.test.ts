/**
 * The heuristic claim model against human judgments (bench/claims.ts): the meta-evaluation protocol
 * on a hand-made fixture, then floors a little below the measured figures on the development data
 * in ../shared/data — real assertions where the data is, a visible skip where it is not.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  correlations,
  expertQaFigures,
  expertQaPresent,
  pearson,
  pearsonOfDeltas,
  ragCheckerMetrics,
  ragCheckerPresent,
  type RagCheckerData,
  readExpertQa,
  readRagChecker
} from "../../../bench/claims.js"

describe("the meta-evaluation protocol (RAGChecker's meta_eval.py)", () => {
  it("Pearson's r, hand-computed: x = [1, 2, 3], y = [1, 3, 2] → 0.5", () => {
    expect(pearson([1, 2, 3], [1, 3, 2])).toBeCloseTo(0.5, 12)
    expect(pearson([1, 1, 1], [1, 2, 3])).toBeNaN()
  })

  it("deltas are second − first, repeated per annotator; a missing delta takes the median of the others", () => {
    const pair = (n: number, labels: ReadonlyArray<number>) => ({
      domain: "d",
      cases: [`${n}-1`, `${n}-2`] as const,
      annotators: labels.map((l) => ({ correctness: l, completeness: l, overall: l }))
    })
    const data: RagCheckerData = { cases: [], pairs: [pair(0, [1, 2]), pair(1, [-1, -1]), pair(2, [0, 1]), pair(3, [2, 2])] }
    const m = (precision: number | null) => ({ precision, recall: null, f1: null })
    const metrics = new Map([
      ["0-1", m(0.2)], ["0-2", m(0.8)], // delta 0.6
      ["1-1", m(0.5)], ["1-2", m(0.1)], // delta −0.4
      ["2-1", m(0.3)], ["2-2", m(0.3)], // delta 0
      ["3-1", m(null)], ["3-2", m(0.9)] // missing → median(0.6, −0.4, 0) = 0
    ])
    const x = [0.6, 0.6, -0.4, -0.4, 0, 0, 0, 0]
    const y = [1, 2, -1, -1, 0, 1, 2, 2]
    expect(pearsonOfDeltas(data, metrics, "precision")).toBeCloseTo(pearson(x, y), 12)
  })
})

// A user's clone has no ../shared: these blocks are skipped there, visibly (their titles say why).
describe.skipIf(!ragCheckerPresent())("RAGChecker meta-evaluation, 140 pairs (skipped when ../shared/data/ragchecker-dev is absent)", () => {
  it("claim precision / recall / F1 track correctness / completeness / overall (measured 0.406 / 0.593 / 0.578)", () => {
    const data = readRagChecker()
    const r = correlations(data, ragCheckerMetrics(data))
    expect(r.precision).toBeGreaterThanOrEqual(0.38)
    expect(r.recall).toBeGreaterThanOrEqual(0.57)
    expect(r.f1).toBeGreaterThanOrEqual(0.55)
  })
})

describe.skipIf(!expertQaPresent())("ExpertQA claim support, 926 claims (skipped when ../shared/data/expertqa-dev is absent)", () => {
  it("faithfulness ≥ 0.5 against the experts' \"Complete\" (measured balanced accuracy 0.524; on claims with passage text 0.546)", () => {
    const f = expertQaFigures(readExpertQa())
    expect(f.all.claims).toBe(926)
    expect(f.all.balancedAccuracy).toBeGreaterThanOrEqual(0.51)
    expect(f.withPassages.balancedAccuracy).toBeGreaterThanOrEqual(0.53)
  })
})
