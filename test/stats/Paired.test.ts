/**
 * Paired statistics. Reference values:
 * - t tails: mpmath `betainc(df/2, 1/2, 0, df/(df+t²), regularized=True)` at 40 digits, checked
 *   against scipy.stats.t and against the closed forms for df = 1 (1 − (2/π)·atan|t|) and df = 2
 *   (1 − |t|/√(t² + 2));
 * - Student's sleep data (Cushny & Peebles, Student 1908): t = 4.0621, df = 9, p = 0.002833
 *   (R's t.test(paired = TRUE) and scipy.stats.ttest_rel agree);
 * - randomisation and bootstrap: a Python re-implementation of the same generator and algorithm
 *   (exact sign enumeration by hand where small).
 */
import { describe, expect, it } from "vitest"
import {
  bootstrapCi,
  logGamma,
  makePrng,
  minimumPairedCases,
  pairedTTest,
  quantileSorted,
  randomisationTest,
  regularizedIncompleteBeta,
  smallestRandomisationP,
  studentTCdf,
  studentTTwoSided,
  winsTiesLosses
} from "../../src/stats/Paired.js"

/** |actual − expected| ≤ 1e-10 · |expected| (relative), or 1e-15 absolute near 0. */
const expectRelative = (actual: number | null, expected: number, tolerance = 1e-10) => {
  expect(actual).not.toBeNull()
  expect(Math.abs((actual ?? Number.NaN) - expected)).toBeLessThanOrEqual(
    Math.max(tolerance * Math.abs(expected), 1e-15)
  )
}

const sleepA = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
const sleepB = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]

// 40 cases, B = A + N(0.05, 0.15) clipped to [0, 1] (Python random.Random(7)).
const bigA = [
  0.324,
  0.151,
  0.651,
  0.072,
  0.536,
  0.366,
  0.058,
  0.507,
  0.037,
  0.434,
  0.07,
  0.091,
  0.425,
  0.827,
  0.124,
  0.223,
  0.627,
  0.948,
  0.577,
  0.397,
  0.976,
  0.047,
  0.858,
  0.29,
  0.144,
  0.118,
  0.308,
  0.816,
  0.181,
  0.582,
  0.639,
  0.372,
  0.548,
  0.063,
  0.06,
  0.206,
  0.68,
  0.428,
  0.314,
  0.586
]
const bigB = [
  0.253,
  0.238,
  0.765,
  0,
  0.593,
  0.612,
  0,
  0.509,
  0.071,
  0.361,
  0.195,
  0.132,
  0.255,
  1,
  0.274,
  0.415,
  0.893,
  1,
  0.645,
  0.252,
  1,
  0.005,
  0.84,
  0.15,
  0.049,
  0.088,
  0.551,
  0.561,
  0.012,
  0.668,
  0.906,
  0.509,
  0.313,
  0,
  0.164,
  0.146,
  0.562,
  0.625,
  0.529,
  0.66
]

describe("seeded generator (xoshiro128** seeded by mulberry32)", () => {
  it("reproduces the reference stream for seed 42 (Python re-implementation)", () => {
    const prng = makePrng(42)
    expect(Array.from({ length: 5 }, prng.nextUint32)).toEqual([
      659792398,
      3357786954,
      1462362331,
      1298412218,
      1201978535
    ])
  })

  it("same seed, same stream; another seed, another stream; floats in [0, 1), ints in [0, n)", () => {
    const a = makePrng(7)
    const b = makePrng(7)
    const c = makePrng(8)
    const xs = Array.from({ length: 100 }, a.nextFloat)
    expect(Array.from({ length: 100 }, b.nextFloat)).toEqual(xs)
    expect(Array.from({ length: 100 }, c.nextFloat)).not.toEqual(xs)
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true)
    const ints = Array.from({ length: 1000 }, () => a.nextInt(3))
    expect(new Set(ints)).toEqual(new Set([0, 1, 2]))
    expect(makePrng(-1).nextUint32()).toBe(makePrng(2 ** 32 - 1).nextUint32())
  })

  it("nextInt(n) and fillInts(n, …) are u mod n of the stream's draws below the largest multiple of n, in order, for any n", () => {
    // The rule written plainly: the draws themselves (nextUint32), rejection, then `%`.
    const reference = (seed: number, n: number, count: number) => {
      const raw = makePrng(seed)
      const limit = 2 ** 32 - (2 ** 32 % n)
      return Array.from({ length: count }, () => {
        let u = raw.nextUint32()
        while (u >= limit) u = raw.nextUint32()
        return u % n
      })
    }
    // Large n: most draws are above 2³¹ and the quotient is near an integer; 2³² − 5 rejects 1 draw in ~10⁹,
    // 3 · 2³⁰ + 1 about one in four.
    for (const n of [1, 2, 3, 7, 20_000, 1_000_003, 2 ** 31 + 11, 3 * 2 ** 30 + 1, 2 ** 32 - 5, 2 ** 32]) {
      const expected = reference(n, n, 2_000)
      const one = makePrng(n)
      expect(Array.from({ length: 2_000 }, () => one.nextInt(n))).toEqual(expected)
      const bulk = makePrng(n)
      const out = new Uint32Array(2_000)
      bulk.fillInts(n, out)
      expect(Array.from(out)).toEqual(expected)
    }
    // fillUint32: the stream's draws in order, and the stream goes on after them.
    const stream = makePrng(21)
    const filled = makePrng(21)
    const draws = new Uint32Array(1_001)
    filled.fillUint32(draws)
    expect(Array.from(draws)).toEqual(Array.from({ length: 1_001 }, stream.nextUint32))
    expect(filled.nextUint32()).toBe(stream.nextUint32())
    expect(filled.state()).toEqual(stream.state())
    // One generator asked with different n in turn (its rejection limit follows n).
    const mixed = makePrng(5)
    const raw = makePrng(5)
    for (const n of [3, 3 * 2 ** 30 + 1, 3, 10, 10]) {
      let u = raw.nextUint32()
      while (u >= 2 ** 32 - (2 ** 32 % n)) u = raw.nextUint32()
      expect(mixed.nextInt(n)).toBe(u % n)
    }
  })
})

describe("Student t distribution", () => {
  it("ln Γ matches known values (Γ(½) = √π, Γ(n) = (n − 1)!)", () => {
    expectRelative(logGamma(0.5), Math.log(Math.sqrt(Math.PI)), 1e-14)
    expect(Math.abs(logGamma(1))).toBeLessThan(1e-15)
    expectRelative(logGamma(10), Math.log(362880), 1e-14)
    // mpmath loggamma(5000.5)
    expectRelative(logGamma(5000.5), 37586.884887281056, 1e-14)
  })

  it("I_x(a, b) at closed forms: I_x(1, 1) = x, I_x(a, 1) = xᵃ, I_x(1, b) = 1 − (1 − x)ᵇ", () => {
    expectRelative(regularizedIncompleteBeta(0.3, 1, 1), 0.3, 1e-14)
    expectRelative(regularizedIncompleteBeta(0.7, 3, 1), 0.7 ** 3, 1e-13)
    expectRelative(regularizedIncompleteBeta(0.2, 1, 4), 1 - 0.8 ** 4, 1e-13)
    expect(regularizedIncompleteBeta(0, 2, 3)).toBe(0)
    expect(regularizedIncompleteBeta(1, 2, 3)).toBe(1)
  })

  it("two-sided tails match the closed forms for df = 1 and df = 2", () => {
    for (const t of [0.1, 1, 2, 2.5, 12.7]) {
      expectRelative(studentTTwoSided(t, 1), 1 - (2 / Math.PI) * Math.atan(t), 1e-12)
      expectRelative(studentTTwoSided(-t, 2), 1 - t / Math.sqrt(t * t + 2), 1e-12)
    }
  })

  it.each([
    // [t, df, mpmath two-sided p]
    [2.5, 1, 0.24223788318168679745],
    [1, 5, 0.3632174676491226256],
    [2.228, 10, 0.050011771817111365362],
    [0.3, 29, 0.76631709332896775399],
    [4, 9, 0.0031104283103858553863],
    [10, 3, 0.0021283990584141500574],
    [3.3, 1000, 0.001000996725002089935],
    [-1.96, 9999, 0.050023523005210208739],
    [0.01, 7, 0.99230031764362177093],
    [8, 200, 9.8792009093306392193e-14],
    [25, 30, 1.2091822381287026378e-21]
  ])("P(|T| ≥ |%s|) with df = %s is %s to 1e-10", (t, df, p) => {
    expectRelative(studentTTwoSided(t, df), p)
  })

  it("CDF on both sides (mpmath)", () => {
    expectRelative(studentTCdf(-2, 4), 0.058058261758407797)
    expectRelative(studentTCdf(0.5, 12), 0.68694126188733796)
    expectRelative(studentTCdf(1.5, 3), 0.88470806737758847)
    expectRelative(studentTCdf(3, 60), 0.99803615133351369)
    expect(studentTCdf(0, 5)).toBe(0.5)
    expect(studentTTwoSided(Infinity, 5)).toBe(0)
  })
})

describe("paired t-test", () => {
  it("Student's sleep data: t = 4.0621, df = 9, p = 0.0028329", () => {
    const r = pairedTTest(sleepA, sleepB)
    expect(r.n).toBe(10)
    expectRelative(r.meanDifference, 1.58, 1e-12)
    expectRelative(r.sdDifference, 1.2299954832798732, 1e-12)
    expectRelative(r.t, 4.062127683382037, 1e-12)
    expect(r.df).toBe(9)
    expectRelative(r.p, 0.0028328901973842708)
  })

  it("hand-computed: d = 1, 2, 3 → d̄ = 2, s = 1, t = 2√3, p = 1 − √(6/7) (df = 2)", () => {
    const r = pairedTTest([0, 0, 0], [1, 2, 3])
    expectRelative(r.t, 2 * Math.sqrt(3), 1e-14)
    expectRelative(r.p, 0.074179900227448538)
    expectRelative(r.p, 1 - Math.sqrt(6 / 7), 1e-12)
  })

  it("hand-computed: d = 1, 3 → t = 2, df = 1, p = 1 − (2/π)·atan 2; sign follows B − A", () => {
    const r = pairedTTest([1, 3], [0, 0])
    expectRelative(r.t, -2, 1e-14)
    expectRelative(r.p, 0.29516723530086655)
  })

  it("40 cases: t = 1.28544, p = 0.206219 (scipy.stats.ttest_rel)", () => {
    const r = pairedTTest(bigA, bigB)
    expectRelative(r.t, 1.285442085249973, 1e-11)
    expectRelative(r.p, 0.20621886804260152, 1e-10)
  })

  it("zero variance: identical runs p = 1, a constant non-zero shift p = 0", () => {
    expect(pairedTTest([0.2, 0.5, 0.9], [0.2, 0.5, 0.9])).toEqual({
      n: 3,
      meanDifference: 0,
      sdDifference: 0,
      t: 0,
      df: 2,
      p: 1
    })
    const shifted = pairedTTest([1, 2, 3], [2, 3, 4])
    expect(shifted.t).toBe(Infinity)
    expect(shifted.p).toBe(0)
  })

  it("n < 2: no t, no p", () => {
    expect(pairedTTest([], [])).toEqual({ n: 0, meanDifference: null, sdDifference: null, t: null, df: null, p: null })
    expect(pairedTTest([1], [3])).toEqual({ n: 1, meanDifference: 2, sdDifference: null, t: null, df: null, p: null })
  })
})

describe("randomisation (sign-flip) test", () => {
  it("exact by enumeration when 2ⁿ ≤ permutations: d = 1, 2, 3 → only ±(1, 2, 3) reach |Σ| = 6: p = 2/8", () => {
    const r = randomisationTest([0, 0, 0], [1, 2, 3], { seed: 1 })
    expect(r).toEqual({ n: 3, meanDifference: 2, p: 0.25, permutations: 8, exact: true })
  })

  it("sleep data, exact: all differences ≥ 0 with one 0 → 4 of 1,024 sign vectors reach Σ = 15.8", () => {
    const r = randomisationTest(sleepA, sleepB, { seed: 1 })
    expect(r.exact).toBe(true)
    expect(r.p).toBe(4 / 1024)
  })

  it("Monte Carlo is reproducible with a seed, pinned to the Python re-implementation, and close to exact", () => {
    const one = randomisationTest(bigA, bigB, { seed: 1 })
    expect(one.exact).toBe(false)
    expect(one.permutations).toBe(10_000)
    expect(one.p).toBe(0.2084791520847915)
    expect(randomisationTest(bigA, bigB, { seed: 1 })).toEqual(one)
    expect(randomisationTest(bigA, bigB, { seed: 2 }).p).toBe(0.2004799520047995)
    // First 20 cases: exact p over 2²⁰ sign vectors = 0.08042144775390625.
    const mc = randomisationTest(bigA.slice(0, 20), bigB.slice(0, 20), { seed: 7 })
    expect(mc.p).toBe(0.08189181081891811)
    expect(Math.abs((mc.p ?? 1) - 0.08042144775390625)).toBeLessThan(3 * Math.sqrt(0.08 * 0.92 / 10_000))
    const exact = randomisationTest(bigA.slice(0, 20), bigB.slice(0, 20), { seed: 7, permutations: 2 ** 20 })
    expect(exact.exact).toBe(true)
    expect(exact.p).toBe(0.08042144775390625)
  })

  it("a Monte Carlo p is never 0: (1 + hits)/(1 + R)", () => {
    const a = Array.from({ length: 40 }, () => 0)
    const b = Array.from({ length: 40 }, (_, i) => 1 + (i % 3))
    expect(randomisationTest(a, b, { seed: 3 }).p).toBe(1 / 10_001)
  })

  it("edge cases: no case → null, every difference 0 → p = 1", () => {
    expect(randomisationTest([], [], { seed: 1 }).p).toBeNull()
    expect(randomisationTest([0.5, 0.5], [0.5, 0.5], { seed: 1 }).p).toBe(1)
  })

  it("the smallest p it can give: 2/2ⁿ exact, 1/(1 + R) Monte Carlo — reached when every case moves the same way", () => {
    for (const n of [1, 3, 5, 6, 8, 13]) {
      const a = Array.from({ length: n }, (_, i) => 0.9 - i * 0.01)
      const b = a.map(() => 0)
      expect(randomisationTest(a, b, { seed: 1 }).p).toBe(smallestRandomisationP(n))
      expect(smallestRandomisationP(n)).toBe(2 / 2 ** n)
    }
    expect(smallestRandomisationP(20)).toBe(1 / 10_001)
    expect(smallestRandomisationP(6, 32)).toBe(1 / 33)
    expect(smallestRandomisationP(0)).toBe(1)
  })

  it("the fewest paired cases that can reject: 6 at α = 0.05 (2/2⁵ = 0.0625 is not below it), 8 at 0.01, none when R is too small", () => {
    expect(minimumPairedCases(0.05)).toBe(6)
    expect(smallestRandomisationP(5)).toBeGreaterThan(0.05)
    expect(smallestRandomisationP(6)).toBeLessThan(0.05)
    expect(minimumPairedCases(0.01)).toBe(8)
    expect(minimumPairedCases(0.1)).toBe(5)
    expect(minimumPairedCases(0.05, 10)).toBeUndefined()
  })
})

/**
 * The randomisation test and the bootstrap as plain loops over every case, one draw at a time: what
 * `randomisationTest` and `bootstrapCi` must equal exactly — they skip the differences that are 0
 * (which add ±0), draw a resample's indices in one call, and compute a constant resample once.
 */
const plainRandomisationP = (d: ReadonlyArray<number>, seed: number, permutations: number) => {
  let total = 0
  let scale = 0
  for (const x of d) {
    total += x
    scale += Math.abs(x)
  }
  const threshold = Math.abs(total) - 1e-10 * scale
  const prng = makePrng(seed)
  let hits = 0
  for (let r = 0; r < permutations; r++) {
    let s = 0
    let bits = 0
    for (let i = 0; i < d.length; i++) {
      if (i % 32 === 0) bits = prng.nextUint32()
      s += bits & 1 ? -d[i]! : d[i]!
      bits >>>= 1
    }
    if (Math.abs(s) >= threshold) hits++
  }
  return (1 + hits) / (1 + permutations)
}
const plainBootstrap = (d: ReadonlyArray<number>, seed: number, resamples: number) => {
  const prng = makePrng(seed)
  const means = new Float64Array(resamples)
  for (let r = 0; r < resamples; r++) {
    let s = 0
    for (let i = 0; i < d.length; i++) s += d[prng.nextInt(d.length)]!
    means[r] = s / d.length
  }
  means.sort()
  const sorted = Array.from(means)
  // The quantiles as `bootstrapCi` asks for them at level 0.95 ((1 − 0.95) / 2 is not 0.025 in doubles).
  return { lower: quantileSorted(sorted, (1 - 0.95) / 2), upper: quantileSorted(sorted, (1 + 0.95) / 2) }
}

describe("the tests' fast paths give what the plain loops give, exactly", () => {
  const prng = makePrng(2026)
  /** n cases, a share of them unchanged (difference 0), the others moved by a few hundredths. */
  const pairs = (n: number, unchanged: number) => {
    const a = Array.from({ length: n }, () => Math.round(prng.nextFloat() * 100) / 100)
    const b = a.map((x) => (prng.nextFloat() < unchanged ? x : x + Math.round((prng.nextFloat() - 0.45) * 20) / 100))
    return [a, b] as const
  }
  const quiet = Array.from({ length: 40 }, () => 0)
  const signedZerosA = [0, -0, 0.25, 0, 0.5, ...quiet]
  const signedZerosB = [-0, 0, 0.5, 0, 0.25, ...quiet]
  const cases: Array<readonly [string, ReadonlyArray<number>, ReadonlyArray<number>]> = [
    ["none unchanged", ...pairs(97, 0)],
    ["half unchanged", ...pairs(150, 0.5)],
    ["95% unchanged", ...pairs(400, 0.95)],
    [
      "one case moved of 64",
      Array.from({ length: 64 }, () => 0.5),
      Array.from({ length: 64 }, (_, i) => i === 40 ? 0.75 : 0.5)
    ],
    [
      "every case moved by the same 0.25 (exact in binary: every difference equal)",
      Array.from({ length: 50 }, (_, i) => i / 4),
      Array.from({ length: 50 }, (_, i) => i / 4 + 0.25)
    ],
    ["every difference 0", Array.from({ length: 45 }, () => 0.3), Array.from({ length: 45 }, () => 0.3)],
    ["+0 and −0 differences beside moved ones", signedZerosA, signedZerosB]
  ]
  for (const [name, a, b] of cases) {
    it(name, () => {
      const d = a.map((x, i) => b[i]! - x)
      for (const seed of [1, 9]) {
        const r = randomisationTest(a, b, { seed, permutations: 999 })
        if (d.some((x) => x !== 0)) expect(r.p).toBe(plainRandomisationP(d, seed, 999))
        else expect(r.p).toBe(1)
        const ci = bootstrapCi(a, b, { seed, resamples: 500 })
        const plain = plainBootstrap(d, seed, 500)
        expect(ci.lower).toBe(plain.lower)
        expect(ci.upper).toBe(plain.upper)
      }
    })
  }
})

describe("bootstrap CI of the mean difference", () => {
  it("type-7 quantiles (numpy's default)", () => {
    expect(quantileSorted([1, 2, 3, 4], 0.5)).toBe(2.5)
    expect(quantileSorted([1, 2, 3, 4, 5], 0.25)).toBe(2)
    expect(quantileSorted([10], 0.975)).toBe(10)
  })

  it("contains the true mean difference on a clear case, and excludes 0", () => {
    const prng = makePrng(99)
    const a = Array.from({ length: 60 }, () => prng.nextFloat())
    const b = a.map((x) => x + 0.3 + (prng.nextFloat() - 0.5) * 0.1)
    const ci = bootstrapCi(a, b, { seed: 5 })
    expect(ci.lower!).toBeLessThan(0.3)
    expect(ci.upper!).toBeGreaterThan(0.3)
    expect(ci.lower!).toBeGreaterThan(0.27)
    expect(ci.upper!).toBeLessThan(0.33)
    expect(ci.level).toBe(0.95)
    expect(ci.resamples).toBe(10_000)
  })

  it("is reproducible with a seed and pinned to the Python re-implementation", () => {
    const ci = bootstrapCi(bigA, bigB, { seed: 1 })
    expect(ci.lower).toBe(-0.01420124999999998)
    expect(ci.upper).toBe(0.07130062499999998)
    expect(bootstrapCi(bigA, bigB, { seed: 1 })).toEqual(ci)
    const sleep = bootstrapCi(sleepA, sleepB, { seed: 2024 })
    expect(sleep.lower).toBeCloseTo(0.95, 12)
    expect(sleep.upper).toBeCloseTo(2.37, 12)
  })

  it("edge cases: n = 0 → null; n = 1 → the single difference; zero variance → a point", () => {
    expect(bootstrapCi([], [], { seed: 1 })).toMatchObject({ n: 0, lower: null, upper: null })
    expect(bootstrapCi([0.25], [0.75], { seed: 1 })).toMatchObject({ lower: 0.5, upper: 0.5 })
    expect(bootstrapCi([1, 2, 3], [2, 3, 4], { seed: 1 })).toMatchObject({ lower: 1, upper: 1 })
  })
})

describe("wins / ties / losses", () => {
  it("counts from B's side; float noise is a tie", () => {
    expect(winsTiesLosses([0.1, 0.5, 0.9, 0.3], [0.2, 0.5, 0.8, 0.1 + 0.2])).toEqual({ wins: 1, ties: 2, losses: 1 })
    expect(winsTiesLosses([], [])).toEqual({ wins: 0, ties: 0, losses: 0 })
  })
})
