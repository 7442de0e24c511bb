/** `judge-bench --sample N`: proportional to the strata, at least one of each when N allows, seeded. */
import { describe, expect, it } from "vitest"
import { allocate, stratifiedSample } from "../../src/judgebench/Sample.js"

describe("stratified sample", () => {
  it("shares N out in proportion to the strata, largest remainders first, one each when N allows", () => {
    // 8 of 488 + 189: 5.77 and 2.23 → 6 and 2.
    expect(allocate([488, 189], 8)).toEqual([6, 2])
    expect(allocate([30, 30, 30, 30, 20], 14)).toEqual([3, 3, 3, 3, 2])
    // Three places for strata of 97, 1, 1, 1: every stratum can have one, so each stratum present gets one.
    expect(allocate([97, 1, 1, 1], 4)).toEqual([1, 1, 1, 1])
    expect(allocate([5, 3], 20)).toEqual([5, 3])
    for (const n of [1, 2, 7, 50, 139]) expect(allocate([40, 30, 30, 20, 20], n).reduce((s, x) => s + x, 0)).toBe(n)
  })

  it("the same N and seed choose the same items, in their own order; another seed others", () => {
    const items = Array.from({ length: 100 }, (_, i) => ({ i, s: i % 3 === 0 ? "a" : "b" }))
    const one = stratifiedSample(items, (x) => x.s, 10, 42)
    expect(stratifiedSample(items, (x) => x.s, 10, 42)).toEqual(one)
    expect(one.map((x) => x.i)).toEqual([...one.map((x) => x.i)].sort((a, b) => a - b))
    expect(one.filter((x) => x.s === "a")).toHaveLength(3)
    expect(stratifiedSample(items, (x) => x.s, 10, 7)).not.toEqual(one)
    expect(stratifiedSample(items, (x) => x.s, 500, 42)).toHaveLength(100)
  })
})
