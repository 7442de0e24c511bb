import { describe, expect, it } from "@effect/vitest"
import { percentile, spanStats } from "../../src/stats/Latency.js"

describe("percentile (linear between closest ranks, numpy's default)", () => {
  it("hand-computed: [1, 3, 7, 9, 12]", () => {
    const sorted = [1, 3, 7, 9, 12]
    // h = 4·p: P50 → x[2] = 7; P90 → h = 3.6 → 9 + 0.6·3 = 10.8; P99 → h = 3.96 → 9 + 0.96·3 = 11.88
    expect(percentile(sorted, 50)).toBe(7)
    expect(percentile(sorted, 90)).toBeCloseTo(10.8, 12)
    expect(percentile(sorted, 99)).toBeCloseTo(11.88, 12)
    expect(percentile(sorted, 0)).toBe(1)
    expect(percentile(sorted, 100)).toBe(12)
  })

  it("one value, and none", () => {
    expect(percentile([5], 99)).toBe(5)
    expect(percentile([], 50)).toBeNull()
  })
})

describe("spanStats", () => {
  it("hand-computed: [12, 1, 9, 3, 7] in any order", () => {
    // sorted 1 3 7 9 12; mean 32 / 5 = 6.4; P90: h = 3.6 → 9 + 0.6 · 3 = 10.8; P99: h = 3.96 → 9 + 0.96 · 3 = 11.88
    const s = spanStats([12, 1, 9, 3, 7])!
    expect(s.n).toBe(5)
    expect(s.mean).toBeCloseTo(6.4, 12)
    expect(s.p50).toBe(7)
    expect(s.p90).toBeCloseTo(10.8, 12)
    expect(s.p99).toBeCloseTo(11.88, 12)
    expect(s.max).toBe(12)
  })

  it("no values (or only non-finite ones): undefined", () => {
    expect(spanStats([])).toBeUndefined()
    expect(spanStats([Number.NaN, Number.POSITIVE_INFINITY])).toBeUndefined()
  })
})
