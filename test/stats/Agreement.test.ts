import { describe, expect, it } from "vitest"
import { addUnit, emptyAgreement, finishAgreement, meanStd } from "../../src/stats/Agreement.js"

const alphaOf = (units: ReadonlyArray<ReadonlyArray<number | null>>) => finishAgreement(units.reduce(addUnit, emptyAgreement()))

describe("Krippendorff's alpha (ordinal) and exact agreement", () => {
  it("reproduces the published example (Krippendorff 2011, 4 coders × 12 units: ordinal α = 0.815)", () => {
    const n = null
    const data = [[1, 1, n, 1], [2, 2, 3, 2], [3, 3, 3, 3], [3, 3, 3, 3], [2, 2, 2, 2], [1, 2, 3, 4], [4, 4, 4, 4], [1, 1, 2, 1], [2, 2, 2, 2], [n, 5, 5, 5], [n, n, 1, 1], [n, n, 3, n]]
    const a = alphaOf(data)
    // Value computed with the textbook formula in Python: 0.8153875037548814.
    expect(a.krippendorffAlpha).toBeCloseTo(0.8153875037548814, 12)
    // 11 units have ≥ 2 values; 8 of them agree fully (all but units 2, 6 and 8).
    expect(a.units).toBe(11)
    expect(a.exactAgreement).toBeCloseTo(8 / 11, 12)
  })

  it("a second hand-checked case", () => {
    expect(alphaOf([[0, 0, 1], [1, 1, 1], [2, 1, 2], [0, 0, 0]]).krippendorffAlpha).toBeCloseTo(0.7212585034013606, 12)
  })

  it("perfect agreement on one value is α = 1; too little data is null", () => {
    expect(alphaOf([[2, 2], [2, 2]]).krippendorffAlpha).toBe(1)
    expect(alphaOf([[2, 2], [2, 2]]).exactAgreement).toBe(1)
    expect(alphaOf([[1], [null, 2]])).toEqual({ units: 0, exactAgreement: null, krippendorffAlpha: null })
    expect(alphaOf([])).toEqual({ units: 0, exactAgreement: null, krippendorffAlpha: null })
  })

  it("mean ± sample std ignore nulls", () => {
    expect(meanStd([1, 2, 3, null])).toEqual({ mean: 2, std: 1, n: 3 })
    expect(meanStd([null])).toEqual({ mean: null, std: null, n: 0 })
    expect(meanStd([5])).toEqual({ mean: 5, std: 0, n: 1 })
  })
})
