import * as fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { makePrng } from "../../src/stats/Paired.js"
import { averageRanks, kendallTauB, pearson, spearmanRho, unitCorrelations } from "../../src/stats/RankCorrelation.js"
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

describe("Pearson's r (values from scipy.stats.pearsonr)", () => {
  it("matches scipy on small vectors, and does not lose precision to a large offset", () => {
    expect(pearson([1, 2, 3, 4, 5, 6], [2, 1, 4, 3, 7, 5]).value).toBeCloseTo(0.7917946548886295, 14)
    expect(pearson([0.5, 0.5, 1, 0, 0.25], [1, 2, 2, -1, 0]).value).toBeCloseTo(0.8790490729915327, 14)
    expect(pearson([1e9 + 1, 1e9 + 2, 1e9 + 3], [3, 1, 2]).value).toBeCloseTo(-0.5, 12)
  })

  it("undefined when a side is constant or there are fewer than 2 pairs", () => {
    expect(pearson([3, 3, 3], [1, 2, 3]).reason).toMatch(/same value/)
    expect(pearson([1], [2]).value).toBeNull()
  })
})

describe("unitCorrelations: r and τ-b of resampled units without expanding them", () => {
  it("equal pearson and kendallTauB of the expanded resample, ties and repeated units included", () => {
    const prng = makePrng(11)
    // Units of 1–3 pairs on coarse grids, so ties in x, in y and in both are frequent.
    const units = Array.from(
      { length: 40 },
      () =>
        Array.from(
          { length: 1 + prng.nextInt(3) },
          () => [prng.nextInt(5) / 4, prng.nextInt(5) - 2] as const
        )
    )
    const fast = unitCorrelations(units)
    for (let trial = 0; trial < 20; trial++) {
      const m = new Int32Array(units.length)
      for (let i = 0; i < units.length; i++) m[prng.nextInt(units.length)]! += 1
      const x: Array<number> = []
      const y: Array<number> = []
      units.forEach((u, i) => {
        for (let c = 0; c < m[i]!; c++) {
          for (const [a, b] of u) {
            x.push(a)
            y.push(b)
          }
        }
      })
      expect(fast.pearson(m).value).toBeCloseTo(pearson(x, y).value!, 12)
      expect(fast.kendallTauB(m).value).toBeCloseTo(kendallTauB(x, y).value!, 12)
    }
  })

  it("a constant resample is undefined, not a rounding artefact", () => {
    const fast = unitCorrelations([[[0.3, 1]], [[0.3, 2]], [[0.7, 0]]])
    expect(fast.pearson(Int32Array.from([2, 1, 0])).value).toBeNull()
    expect(fast.kendallTauB(Int32Array.from([2, 1, 0])).value).toBeNull()
  })
})
