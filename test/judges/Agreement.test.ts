/**
 * The heuristic judge against human relevance labels (bench/judge-agreement.ts): its κ function and
 * threshold fit by hand, then the targets on the LLMJudge test set (../shared/data/llmjudge-test) —
 * a real assertion where the data is, a visible skip where it is not. TREC DL 2019/2020 directories
 * (built by bench/llmjudge-convert.ts) are checked too when present.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { binary, cohenKappa, fitThresholds, leaveOneQueryOut, measureAgreement } from "../../bench/judge-agreement.js"

const data = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "../../../shared/data")
const present = (name: string) =>
  fs.existsSync(Path.join(data, name, "search.jsonl")) && fs.existsSync(Path.join(data, name, "qrels.txt"))

describe("Cohen's κ (hand-computed)", () => {
  it("2×2: p_o = 35/50, p_e = (25·30 + 25·20)/50² = 0.5 → κ = 0.4", () => {
    expect(cohenKappa([[20, 5], [10, 15]])).toBeCloseTo(0.4, 12)
  })
  it("3×3: p_o = 0.6, p_e = (4·4 + 3·3 + 3·3)/100 = 0.34 → κ = 0.26/0.66", () => {
    expect(cohenKappa([[3, 1, 0], [1, 1, 1], [0, 1, 2]])).toBeCloseTo(0.26 / 0.66, 12)
  })
  it("perfect agreement is 1, chance agreement 0, undefined cases NaN", () => {
    expect(cohenKappa([[5, 0], [0, 5]])).toBe(1)
    expect(cohenKappa([[1, 1], [1, 1]])).toBe(0)
    expect(cohenKappa([[0, 0], [0, 0]])).toBeNaN()
    expect(cohenKappa([[4, 0], [0, 0]])).toBeNaN() // both raters constant on the same value
  })
  it("binary folds grades 0–1 and 2–3", () => {
    expect(binary([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15, 16]])).toEqual([[14, 22], [46, 54]])
  })
})

describe("threshold fit", () => {
  it("recovers separating thresholds on the grid, and leave-one-query-out keeps them", () => {
    const rows = ["a", "b", "c"].flatMap((qid) => [
      { qid, human: 0, s: 0.1 },
      { qid, human: 1, s: 0.52 },
      { qid, human: 2, s: 0.93 },
      { qid, human: 3, s: 1.41 }
    ])
    const t = fitThresholds(rows)
    // Any threshold in (0.1, 0.52], (0.52, 0.93], (0.93, 1.41] separates; the first such grid value wins.
    expect(t).toEqual([0.15, 0.55, 0.95])
    const cv = leaveOneQueryOut(rows)
    expect(cv.kappa4).toBe(1)
    expect(cv.kappa2).toBe(1)
  })
})

describe("agreement with NIST assessors", () => {
  it.skipIf(!present("llmjudge-test"))(
    "llmjudge-test: κ ≥ 0.15 on four grades and ≥ 0.25 on relevant/not, above Llama-3-8B's",
    async () => {
      const a = await measureAgreement(Path.join(data, "llmjudge-test"), { throughputSeconds: 0 })
      expect(a.queries).toBe(25)
      expect(a.pairs).toBe(4410)
      expect(a.confusion.flat().reduce((x, y) => x + y, 0)).toBe(4410)
      // The local κ reproduces the published figures for the Llama grades shipped with the data.
      expect(a.reference!.kappa4).toBeCloseTo(0.1044, 4)
      expect(a.reference!.kappa2).toBeCloseTo(0.1545, 4)
      expect(a.kappa4).toBeGreaterThanOrEqual(0.15)
      expect(a.kappa2).toBeGreaterThanOrEqual(0.25)
      expect(a.kappa4).toBeGreaterThan(a.reference!.kappa4)
      expect(a.kappa2).toBeGreaterThan(a.reference!.kappa2)
      // Thresholds refitted without each query still clear the targets.
      expect(a.crossValidation.kappa4).toBeGreaterThanOrEqual(0.15)
      expect(a.crossValidation.kappa2).toBeGreaterThanOrEqual(0.25)
    },
    120_000
  )

  for (const name of ["trec-dl-2019", "trec-dl-2020"]) {
    it.skipIf(!present(name))(
      `${name}: above Llama-3-8B's grades on the same pairs, with the same thresholds`,
      async () => {
        const a = await measureAgreement(Path.join(data, name), { throughputSeconds: 0 })
        expect(a.kappa4).toBeGreaterThanOrEqual(0.15)
        expect(a.kappa2).toBeGreaterThanOrEqual(0.25)
        if (a.reference !== undefined) {
          expect(a.kappa4).toBeGreaterThan(a.reference.kappa4)
          expect(a.kappa2).toBeGreaterThan(a.reference.kappa2)
        }
      },
      120_000
    )
  }
})
