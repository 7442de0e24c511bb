import { describe, expect, it } from "vitest"
import {
  bootstrapTable,
  bootstrapUnits,
  narrowing,
  resampleTable,
  sampleBinomial,
  uniform53
} from "../../src/stats/Bootstrap.js"
import { cohenKappa, type ContingencyTable, emptyTable, exactAgreement, tableOf } from "../../src/stats/Kappa.js"
import { logGamma, makePrng, quantileSorted } from "../../src/stats/Paired.js"

const pmf = (n: number, p: number, k: number) =>
  Math.exp(logGamma(n + 1) - logGamma(k + 1) - logGamma(n - k + 1) + k * Math.log(p) + (n - k) * Math.log1p(-p))

const moments = (n: number, p: number, draws: number, seed: number) => {
  const prng = makePrng(seed)
  let sum = 0
  let sumSq = 0
  for (let i = 0; i < draws; i++) {
    const x = sampleBinomial(n, p, prng)
    expect(Number.isInteger(x) && x >= 0 && x <= n).toBe(true)
    sum += x
    sumSq += x * x
  }
  const mean = sum / draws
  return { mean, variance: sumSq / draws - mean * mean }
}

describe("binomial sampler", () => {
  it("edge cases are exact", () => {
    const prng = makePrng(1)
    expect(sampleBinomial(0, 0.5, prng)).toBe(0)
    expect(sampleBinomial(10, 0, prng)).toBe(0)
    expect(sampleBinomial(10, 1, prng)).toBe(10)
  })

  it("uniform53 is in [0, 1)", () => {
    const prng = makePrng(3)
    for (let i = 0; i < 10_000; i++) {
      const u = uniform53(prng)
      expect(u >= 0 && u < 1).toBe(true)
    }
  })

  // Mean n·p and variance n·p·(1 − p) within 4 standard errors, on each path of the sampler.
  for (const [n, p] of [[10, 0.3], [1000, 0.4], [1_000_000, 0.001], [50, 0.9], [4410, 0.25]] as const) {
    it(`Bin(${n}, ${p}): mean and variance`, () => {
      const draws = 20_000
      const { mean, variance } = moments(n, p, draws, 42)
      const v = n * p * (1 - p)
      expect(Math.abs(mean - n * p)).toBeLessThan(4 * Math.sqrt(v / draws))
      // The sample variance's standard error is about v·√(2/draws) for near-normal counts.
      expect(Math.abs(variance - v)).toBeLessThan(4 * v * Math.sqrt(2 / draws) + 0.05)
    })
  }

  // χ² goodness of fit against the exact pmf (bins with expected count ≥ 5; p < 0.001 critical values).
  for (const [n, p] of [[12, 0.2], [60, 0.5]] as const) {
    it(`Bin(${n}, ${p}): χ² against the exact pmf`, () => {
      const draws = 50_000
      const prng = makePrng(9)
      const observed = new Array(n + 1).fill(0)
      for (let i = 0; i < draws; i++) observed[sampleBinomial(n, p, prng)]++
      let chi2 = 0
      let bins = 0
      for (let k = 0; k <= n; k++) {
        const expected = draws * pmf(n, p, k)
        if (expected < 5) continue
        chi2 += (observed[k] - expected) ** 2 / expected
        bins++
      }
      // χ²(df) at p = 0.001: df ≤ 30 → below 60.
      expect(bins).toBeGreaterThan(4)
      expect(chi2).toBeLessThan(60)
    })
  }
})

describe("resampling a table", () => {
  const t = tableOf([0, 0, 1, 1, 2, 2, 2, 3, 3, 3], [0, 1, 1, 1, 2, 3, 2, 3, 3, 0])

  it("keeps N and never fills an empty cell", () => {
    const prng = makePrng(5)
    for (let r = 0; r < 1000; r++) {
      const s = resampleTable(t, prng)
      expect(s.counts.reduce((a, b) => a + b, 0)).toBe(10)
      t.counts.forEach((c, i) => (c === 0 ? expect(s.counts[i]).toBe(0) : undefined))
    }
  })

  it("cell counts average to the original counts", () => {
    const prng = makePrng(6)
    const sums = new Float64Array(t.counts.length)
    const draws = 20_000
    for (let r = 0; r < draws; r++) resampleTable(t, prng).counts.forEach((c, i) => (sums[i]! += c))
    t.counts.forEach((c, i) => expect(sums[i]! / draws).toBeCloseTo(c, 1))
  })

  it("a one-cell table resamples to itself", () => {
    const one = tableOf([2, 2, 2], [2, 2, 2])
    expect(Array.from(resampleTable(one, makePrng(1)).counts)).toEqual([3])
  })
})

describe("percentile bootstrap of table statistics", () => {
  /** N pairs with the given share on the diagonal of a 2 × 2 table. */
  const agreeing = (n: number, share: number): ContingencyTable => {
    const t = emptyTable([0, 1])
    const agree = Math.round(n * share)
    t.counts[0] = Math.ceil(agree / 2)
    t.counts[3] = agree - t.counts[0]!
    t.counts[1] = Math.ceil((n - agree) / 2)
    t.counts[2] = n - agree - t.counts[1]!
    return t
  }

  it("the CI of a proportion matches the normal approximation (p = 0.7, N = 1000: ±1.96·√(p(1−p)/N))", () => {
    const result = bootstrapTable(agreeing(1000, 0.7), [exactAgreement], { seed: 42, resamples: 10_000 })
    const half = 1.96 * Math.sqrt((0.7 * 0.3) / 1000)
    expect(result.intervals[0]!.lower).toBeCloseTo(0.7 - half, 2)
    expect(result.intervals[0]!.upper).toBeCloseTo(0.7 + half, 2)
    expect(result.resamples).toBe(10_000)
  })

  it("agrees with resampling the pairs one by one (the definition), within Monte Carlo error", () => {
    const human = Array.from({ length: 300 }, (_, i) => i % 4)
    const judge = human.map((h, i) => (i % 3 === 0 ? (h + 1) % 4 : h))
    const t = tableOf(human, judge)
    const byTable = bootstrapTable(t, [cohenKappa], { seed: 1, resamples: 4000 }).intervals[0]!
    const prng = makePrng(2)
    const kappas: Array<number> = []
    for (let r = 0; r < 4000; r++) {
      const hs: Array<number> = []
      const js: Array<number> = []
      for (let i = 0; i < human.length; i++) {
        const k = prng.nextInt(human.length)
        hs.push(human[k]!)
        js.push(judge[k]!)
      }
      kappas.push(cohenKappa(tableOf(hs, js, t.grades)).value!)
    }
    kappas.sort((a, b) => a - b)
    expect(byTable.lower).toBeCloseTo(quantileSorted(kappas, 0.025), 2)
    expect(byTable.upper).toBeCloseTo(quantileSorted(kappas, 0.975), 2)
  })

  it("is reproducible from the seed and changes with it", () => {
    const t = agreeing(200, 0.6)
    const a = bootstrapTable(t, [exactAgreement], { seed: 42, resamples: 500 })
    const b = bootstrapTable(t, [exactAgreement], { seed: 42, resamples: 500 })
    const c = bootstrapTable(t, [exactAgreement], { seed: 43, resamples: 500 })
    expect(a).toEqual(b)
    expect(c.intervals).not.toEqual(a.intervals)
  })

  it("an undefined statistic gets no interval; resamples where it is undefined are counted and left out", () => {
    const constant = tableOf([1, 1, 1], [1, 1, 1])
    expect(bootstrapTable(constant, [cohenKappa], { seed: 1, resamples: 100 }).intervals).toEqual([null])
    // 19 pairs (0, 0) and one (1, 1): a resample without the (1, 1) pair has κ undefined.
    const rare = tableOf([...Array(19).fill(0), 1], [...Array(19).fill(0), 1])
    const result = bootstrapTable(rare, [cohenKappa], { seed: 3, resamples: 2000 })
    // P(no (1,1) in 20 draws) = (19/20)^20 ≈ 0.358.
    expect(result.undefinedResamples[0]! / 2000).toBeCloseTo(0.358, 1)
    expect(result.intervals[0]).toEqual({ lower: 1, upper: 1 })
  })
  // Its speed at calibrate's size (4,410 pairs, 10,000 resamples, six statistics) is `npm run bench` [13]'s figure.
})

describe("bootstrap over units", () => {
  it("multiplicities sum to the units in every resample; seeded, so reproducible; null on the data → no interval", () => {
    const totals: Array<number> = []
    const mean = (m: Int32Array) => {
      let n = 0
      let s = 0
      m.forEach((w, i) => {
        n += w
        s += w * i
      })
      totals.push(n)
      return { value: s / n }
    }
    const a = bootstrapUnits(50, [mean, () => ({ value: null, reason: "never" })], { seed: 3, resamples: 500 })
    expect(new Set(totals)).toEqual(new Set([50]))
    expect(a.intervals[0]!.lower).toBeLessThan(24.5)
    expect(a.intervals[0]!.upper).toBeGreaterThan(24.5)
    expect(a.intervals[1]).toBeNull()
    expect(bootstrapUnits(50, [mean], { seed: 3, resamples: 500 }).intervals[0]).toEqual(a.intervals[0])
  })
})

describe("labels to narrow a CI", () => {
  it("n · (half-width / target)², the extra over n; none below 10 units or without a CI", () => {
    // ±0.2 at 40 units → 40 · 4 = 160 units, 120 more
    expect(narrowing({ lower: 0.3, upper: 0.7 }, 40, 0.1)).toEqual({ halfWidth: 0.1, needed: 160, more: 120 })
    expect(narrowing({ lower: 0.45, upper: 0.55 }, 40, 0.1)).toEqual({ halfWidth: 0.1, needed: 40, more: 0 })
    expect(narrowing({ lower: 0, upper: 1 }, 6, 0.1).needed).toBeNull()
    expect(narrowing(null, 100, 0.1).more).toBeNull()
  })
})
