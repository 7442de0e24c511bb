import { describe, expect, it } from "vitest"
import { finalMarkdown, type FinalMetrics } from "../../src/engine/Iterations.js"
import {
  addUnit,
  alphaNoVariation,
  alphaTooFewValues,
  emptyAgreement,
  finishAgreement,
  meanStd
} from "../../src/stats/Agreement.js"

const alphaOf = (units: ReadonlyArray<ReadonlyArray<number | null>>) =>
  finishAgreement(units.reduce(addUnit, emptyAgreement()))

describe("Krippendorff's alpha (ordinal) and exact agreement", () => {
  it("reproduces the published example (Krippendorff 2011, 4 coders × 12 units: ordinal α = 0.815)", () => {
    const n = null
    const data = [
      [1, 1, n, 1],
      [2, 2, 3, 2],
      [3, 3, 3, 3],
      [3, 3, 3, 3],
      [2, 2, 2, 2],
      [1, 2, 3, 4],
      [4, 4, 4, 4],
      [1, 1, 2, 1],
      [2, 2, 2, 2],
      [n, 5, 5, 5],
      [n, n, 1, 1],
      [n, n, 3, n]
    ]
    const a = alphaOf(data)
    // Value computed with the textbook formula in Python: 0.8153875037548814.
    expect(a.krippendorffAlpha).toBeCloseTo(0.8153875037548814, 12)
    // 11 units have ≥ 2 values; 8 of them agree fully (all but units 2, 6 and 8).
    expect(a.units).toBe(11)
    expect(a.exactAgreement).toBeCloseTo(8 / 11, 12)
  })

  it("equals the textbook formula (O(V³), written out here) on continuous values, to 1e-12", () => {
    // The formula of the module's header, as it was computed before: every pair of values, δ² summed over the range.
    const textbook = (units: ReadonlyArray<ReadonlyArray<number>>) => {
      const acc = units.reduce(addUnit, emptyAgreement())
      const values = [...acc.values].sort((a, b) => a - b)
      const o = (c: number, k: number) => acc.coincidences.get(`${c}|${k}`) ?? 0
      const nc = values.map((c) => values.reduce((s, k) => s + o(c, k), 0))
      const n = nc.reduce((s, x) => s + x, 0)
      const delta2 = (i: number, j: number) => {
        const [lo, hi] = i <= j ? [i, j] : [j, i]
        let sum = 0
        for (let g = lo; g <= hi; g++) sum += nc[g]!
        return (sum - (nc[i]! + nc[j]!) / 2) ** 2
      }
      let observed = 0
      let expected = 0
      values.forEach((c, i) =>
        values.forEach((k, j) => {
          observed += o(c, k) * delta2(i, j)
          expected += nc[i]! * nc[j]! * delta2(i, j)
        })
      )
      return 1 - (observed / n) / (expected / (n * (n - 1)))
    }
    let seed = 11
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
    for (const iterations of [2, 3]) {
      const units = Array.from({ length: 150 }, () => {
        const truth = Math.round(random() * 1e4) / 1e4
        return Array.from({ length: iterations }, () => random() < 0.5 ? truth : Math.round(random() * 1e4) / 1e4)
      })
      expect(alphaOf(units).krippendorffAlpha).toBeCloseTo(textbook(units), 12)
    }
  })

  it("a second hand-checked case", () => {
    expect(alphaOf([[0, 0, 1], [1, 1, 1], [2, 1, 2], [0, 0, 0]]).krippendorffAlpha).toBeCloseTo(0.7212585034013606, 12)
  })

  it("no grade varies: α is undefined (null with a note), not 1, while exact agreement is 100%", () => {
    // D_o = D_e = 0: α = 1 − 0/0. A judge that always says 2 agrees with itself, which says nothing.
    const same = alphaOf([[2, 2], [2, 2, 2], [2, null]])
    expect(same).toEqual({
      units: 2,
      exactAgreement: 1,
      krippendorffAlpha: null,
      krippendorffAlphaNote: alphaNoVariation
    })
  })

  it("too little data is null with its note", () => {
    expect(alphaOf([[1], [null, 2]])).toEqual({
      units: 0,
      exactAgreement: null,
      krippendorffAlpha: null,
      krippendorffAlphaNote: alphaTooFewValues
    })
    expect(alphaOf([])).toEqual({
      units: 0,
      exactAgreement: null,
      krippendorffAlpha: null,
      krippendorffAlphaNote: alphaTooFewValues
    })
  })

  it("one unit that varies is enough to define α: two units [0, 1], [1, 1] give α = 0 (hand-computed)", () => {
    // o: (0,1) = (1,0) = 1, (1,1) = 2; n_0 = 1, n_1 = 3, n = 4. δ²(0,1) = (1 + 3 − 2)² = 4.
    // D_o = 2·4/4 = 2; D_e = 2·1·3·4/(4·3) = 2; α = 1 − 2/2 = 0.
    expect(alphaOf([[0, 1], [1, 1]]).krippendorffAlpha).toBeCloseTo(0, 12)
  })

  it("final-report.md shows the undefined α as a dash with its reason, never 1", () => {
    const final: FinalMetrics = {
      iterations: 2,
      metrics: {},
      agreement: { "rag-answers/clarity": finishAgreement([[3, 3], [3, 3]].reduce(addUnit, emptyAgreement())) },
      unstable: [],
      unstableCount: 0
    }
    const md = finalMarkdown(final, [])
    expect(md).toContain(`| rag-answers/clarity | 2 | 100.0% | — (${alphaNoVariation}) |`)
    expect(md).not.toMatch(/\| 1\.000 \|/)
  })

  it("mean ± sample std ignore nulls", () => {
    expect(meanStd([1, 2, 3, null])).toEqual({ mean: 2, std: 1, n: 3 })
    expect(meanStd([null])).toEqual({ mean: null, std: null, n: 0 })
    expect(meanStd([5])).toEqual({ mean: 5, std: 0, n: 1 })
  })
})
