import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { averageRanks, kendallTauB, spearmanRho } from "../../src/stats/RankCorrelation.js"
import { repoRoot } from "../support/RunPipeline.js"

interface RankCase {
  readonly name: string
  readonly x: ReadonlyArray<number>
  readonly y: ReadonlyArray<number>
  readonly kendallTauB: number | null
  readonly spearmanRho: number | null
}

const reference = JSON.parse(
  fs.readFileSync(Path.join(repoRoot, "test/fixtures/calibrate/reference.json"), "utf8")
) as {
  readonly rank: ReadonlyArray<RankCase>
}

/** τ-b by counting every pair: the definition, O(n²). */
const naiveTauB = (x: ReadonlyArray<number>, y: ReadonlyArray<number>): number | null => {
  const n = x.length
  let concordant = 0
  let discordant = 0
  let tiedX = 0
  let tiedY = 0
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      const dx = Math.sign(x[i]! - x[j]!)
      const dy = Math.sign(y[i]! - y[j]!)
      if (dx === 0) tiedX++
      if (dy === 0) tiedY++
      if (dx !== 0 && dy !== 0) {
        if (dx === dy) concordant++
        else discordant++
      }
    }
  }
  const n0 = (n * (n - 1)) / 2
  const d = Math.sqrt((n0 - tiedX) * (n0 - tiedY))
  return d === 0 ? null : (concordant - discordant) / d
}

describe("Kendall's τ-b", () => {
  it("hand-computed: x = (1, 2, 3, 4), y = (1, 3, 2, 4): 5 concordant, 1 discordant → 4/6", () => {
    expect(kendallTauB([1, 2, 3, 4], [1, 3, 2, 4]).value).toBeCloseTo(2 / 3, 12)
  })

  it("hand-computed with ties: x = (1, 1, 2), y = (1, 2, 3): nc = 2, nd = 0, n₁ = 1 → 2/√(2·3)", () => {
    expect(kendallTauB([1, 1, 2], [1, 2, 3]).value).toBeCloseTo(2 / Math.sqrt(6), 12)
  })

  it("identical and reversed orders are ±1", () => {
    expect(kendallTauB([0.1, 0.5, 0.3], [1, 5, 3]).value).toBeCloseTo(1, 12)
    expect(kendallTauB([1, 2, 3, 4, 5], [5, 4, 3, 2, 1]).value).toBeCloseTo(-1, 12)
  })

  it("undefined: fewer than 2 pairs, or a side with every value tied", () => {
    expect(kendallTauB([], []).value).toBeNull()
    expect(kendallTauB([1], [2]).value).toBeNull()
    expect(kendallTauB([1, 1, 1], [1, 2, 3])).toMatchObject({
      value: null,
      reason: expect.stringContaining("same value")
    })
  })

  it("the O(n log n) count equals counting every pair, on tied random data", () => {
    let seed = 11
    const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648
    for (let trial = 0; trial < 30; trial++) {
      const n = 2 + Math.floor(next() * 80)
      const x = Array.from({ length: n }, () => Math.floor(next() * 5))
      const y = x.map((v) => (next() < 0.5 ? v : Math.floor(next() * 5)))
      const expected = naiveTauB(x, y)
      const actual = kendallTauB(x, y).value
      if (expected === null) expect(actual).toBeNull()
      else expect(actual).toBeCloseTo(expected, 12)
    }
  })

  it("does not reorder its inputs", () => {
    const x = [3, 1, 2]
    const y = [1, 3, 2]
    kendallTauB(x, y)
    expect([x, y]).toEqual([[3, 1, 2], [1, 3, 2]])
  })
})

describe("Spearman's ρ with average ranks", () => {
  it("average ranks of ties (scipy rankdata 'average')", () => {
    expect(Array.from(averageRanks([10, 20, 20, 5, 20]))).toEqual([2, 4, 4, 1, 4])
  })

  it("hand-computed: x = (1, 2, 3, 4), y = (1, 3, 2, 4) → 1 − 6·Σd²/(n(n²−1)) = 1 − 12/60 = 0.8", () => {
    expect(spearmanRho([1, 2, 3, 4], [1, 3, 2, 4]).value).toBeCloseTo(0.8, 12)
  })

  it("undefined when a side is constant or there are fewer than 2 pairs", () => {
    expect(spearmanRho([2, 2, 2], [1, 2, 3]).value).toBeNull()
    expect(spearmanRho([1], [1]).value).toBeNull()
  })
})

describe("against scipy.stats kendalltau (variant b) and spearmanr (reference.json)", () => {
  it("has the cases", () => expect(reference.rank.length).toBeGreaterThanOrEqual(8))
  for (const c of reference.rank) {
    it(c.name, () => {
      const tau = kendallTauB(c.x, c.y).value
      const rho = spearmanRho(c.x, c.y).value
      if (c.kendallTauB === null) expect(tau).toBeNull()
      else expect(tau).toBeCloseTo(c.kendallTauB, 12)
      if (c.spearmanRho === null) expect(rho).toBeNull()
      else expect(rho).toBeCloseTo(c.spearmanRho, 12)
    })
  }
})
