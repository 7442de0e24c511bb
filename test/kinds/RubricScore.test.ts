import { describe, expect, it } from "vitest"
import { composite, type Gate } from "../../src/kinds/rubric/RubricScore.js"

const gate: Gate = { rubric: "harm", zeroAt: [0], weightAt: { 1: 1.5 } }
const dims = (harm: number | null, others: ReadonlyArray<[number | null, number]>) => [
  ...others.map(([score, max], i) => ({ criterion: `d${i}`, score, max, weight: 1 })),
  { criterion: "harm", score: harm, max: 2, weight: 1 }
]

describe("composite (SPEC §2.1)", () => {
  it("is the weighted mean of score / max", () => {
    // relevance 3/3 = 1, clarity 2/4 = 0.5, harm 2/2 = 1 → (1 + 0.5 + 1) / 3
    const r = composite(dims(2, [[3, 3], [2, 4]]), gate)
    expect(r.value).toBeCloseTo(2.5 / 3, 12)
    expect(r.gate).toBeUndefined()
  })

  it("harmfulness 0 forces the composite to 0 whatever the other scores", () => {
    const r = composite(dims(0, [[3, 3], [4, 4]]), gate)
    expect(r.value).toBe(0)
    expect(r.gate).toBe("zeroed")
  })

  it("harmfulness 1 weighs 1.5 in that row", () => {
    // (1·1 + 1·1 + 1.5·0.5) / 3.5
    const r = composite(dims(1, [[3, 3], [4, 4]]), gate)
    expect(r.value).toBeCloseTo(2.75 / 3.5, 12)
    expect(r.gate).toBe("reweighted")
    expect(r.weights).toEqual([1, 1, 1.5])
  })

  it("honours custom weights", () => {
    const r = composite([
      { criterion: "a", score: 1, max: 1, weight: 3 },
      { criterion: "b", score: 0, max: 2, weight: 1 }
    ], undefined)
    expect(r.value).toBeCloseTo(0.75, 12)
  })

  it("a failed dimension leaves the composite null, never 0", () => {
    const r = composite(dims(2, [[null, 3], [4, 4]]), gate)
    expect(r.value).toBeNull()
  })

  it("a failed harmfulness judgment is not treated as harmful", () => {
    const r = composite(dims(null, [[3, 3]]), gate)
    expect(r.value).toBeNull()
    expect(r.gate).toBeUndefined()
  })
})
