/**
 * Evidence metrics on a hand-computed example. Matching is "the chunk contains the span's letter"
 * so the arithmetic is about the metrics, not the matcher:
 *
 * q1: gold A, B, C; chunks [-, A, -, "B C", -, -] → relevance [0,1,0,1,0,0]
 *     covered@3 = 1 (A), covered@10 = 3 · P@5 = 2/5 · coverage 1/3, 1 · full 0, 1
 *     AP = (1/2 + 2/4) / 2 = 0.5 · RR = 1/2 · hit@10 = 1
 * q2: gold D; chunks [D, D] → covered 1, 1 · P@5 = 2/5 · coverage 1, 1 · full 1, 1 · AP 1 · RR 1 · hit 1
 * q3: gold E, F; no chunk → 0 everywhere
 * q4: no gold span; one chunk → 0 everywhere, listed as without gold
 * Micro recall@3 = (1 + 1) / (3 + 1 + 2) = 1/3, @10 = (3 + 1) / 6 = 2/3.
 */
import { describe, expect, it } from "@effect/vitest"
import { coverageMatrix, coveredSpans, evaluateEvidence, type EvidenceQuery } from "../../src/metrics/evidence.js"

const queries: Array<EvidenceQuery> = [
  { id: "q1", gold: ["A", "B", "C"], chunks: ["-", "A", "-", "B C", "-", "-"] },
  { id: "q2", gold: ["D"], chunks: ["D", "D"] },
  { id: "q3", gold: ["E", "F"], chunks: [] },
  { id: "q4", gold: [], chunks: ["x"] }
]
const containsLetter = (chunk: string, span: string) => chunk.includes(span)

describe("evaluateEvidence", () => {
  it("per query", () => {
    const summary = evaluateEvidence(queries, { covers: containsLetter })
    const [q1, q2, q3, q4] = summary.perQuery
    expect(q1).toEqual({
      id: "q1",
      goldSpans: 3,
      coveredAt3: 1,
      coveredAt10: 3,
      precisionAt5: 0.4,
      coverageAt3: 1 / 3,
      coverageAt10: 1,
      fullCoverageAt3: 0,
      fullCoverageAt10: 1,
      averagePrecision: 0.5,
      reciprocalRank: 0.5,
      hitAt10: 1,
      relevance: [0, 1, 0, 1, 0, 0]
    })
    expect(q2).toMatchObject({
      coveredAt3: 1,
      precisionAt5: 0.4,
      coverageAt3: 1,
      fullCoverageAt3: 1,
      averagePrecision: 1,
      reciprocalRank: 1
    })
    expect(q3).toMatchObject({
      goldSpans: 2,
      coveredAt10: 0,
      precisionAt5: 0,
      coverageAt10: 0,
      averagePrecision: 0,
      hitAt10: 0
    })
    expect(q4).toMatchObject({ goldSpans: 0, coverageAt10: 0, fullCoverageAt10: 0, precisionAt5: 0, relevance: [0] })
    expect(summary.withoutGold).toEqual(["q4"])
  })

  it("aggregates: micro recall, macro coverage, means", () => {
    const { metrics, queries: count } = evaluateEvidence(queries, { covers: containsLetter })
    expect(count).toBe(4)
    expect(metrics).toEqual({
      "Precision@5": 0.2,
      "EvidenceRecall@3": 2 / 6,
      "EvidenceRecall@10": 4 / 6,
      "PerQueryCoverage@3": (1 / 3 + 1) / 4,
      "PerQueryCoverage@10": 0.5,
      "FullCoverageRate@3": 0.25,
      "FullCoverageRate@10": 0.5,
      MAP: 0.375,
      MRR: 0.375,
      "HitRate@10": 0.5
    })
  })

  it("no queries → every metric 0", () => {
    const { metrics, queries: count } = evaluateEvidence([])
    expect(count).toBe(0)
    expect(Object.values(metrics).every((value) => value === 0)).toBe(true)
  })

  it("default matcher: normalised substring or difflib ratio ≥ 0.7", () => {
    const query: EvidenceQuery = {
      id: "q",
      gold: ["The cat sat on the MAT", "Revenue grew 12% in 2023", "Dogs bark"],
      chunks: ["the cat sat on a mat", "In 2023 we saw that revenue grew 12% in 2023, again.", "nothing here"]
    }
    // span 1 ~ chunk 1 (ratio 0.905), span 2 ⊂ chunk 2 after normalisation, span 3 nowhere
    expect(coverageMatrix(query)).toEqual([
      [true, false, false],
      [false, true, false],
      [false, false, false]
    ])
    expect(coverageMatrix(query, { fuzzyThreshold: 0.95 })[0]).toEqual([false, false, false])
    const summary = evaluateEvidence([query])
    expect(summary.metrics["EvidenceRecall@3"]).toBe(2 / 3)
    expect(summary.metrics.MRR).toBe(1)
    expect(summary.metrics["Precision@5"]).toBe(0.4)
  })

  it("coveredSpans counts each span once, whatever the number of covering chunks", () => {
    expect(coveredSpans([[true, false], [true, false], [false, true]], 2, 2)).toBe(1)
    expect(coveredSpans([[true, false], [true, false], [false, true]], 2, 3)).toBe(2)
    expect(coveredSpans([], 2, 3)).toBe(0)
  })
})
