import { describe, expect, it } from "vitest"
import { makePrng, quantileSorted } from "../../src/stats/Paired.js"
import { poissonBootstrap } from "../../src/stats/PoissonBootstrap.js"

/**
 * The rule, written plainly: each item draws a Poisson(1) weight per resample by inverting one
 * `nextFloat()` against the CDF, and every resample adds w·x and w to each statistic the item has.
 * `poissonBootstrap` skips what cannot change a sum; its intervals must be these, bit for bit.
 */
const reference = (statistics: number, seed: number, resamples: number) => {
  const cdf: Array<number> = []
  let p = Math.exp(-1)
  let sum = 0
  for (let k = 0; k < 20; k++) {
    sum += p
    cdf.push(sum)
    p /= k + 1
  }
  const prng = makePrng(seed)
  const sums = Array.from({ length: statistics }, () => new Array<number>(resamples).fill(0))
  const weights = Array.from({ length: statistics }, () => new Array<number>(resamples).fill(0))
  const counts = new Array<number>(statistics).fill(0)
  return {
    sums,
    add: (values: ReadonlyArray<number | null | undefined>) => {
      if (values.every((v) => v === null)) return
      const w: Array<number> = []
      for (let r = 0; r < resamples; r++) {
        const u = prng.nextFloat()
        let k = 0
        while (k < cdf.length - 1 && u >= cdf[k]!) k++
        w.push(k)
      }
      for (let s = 0; s < statistics; s++) {
        const x = values[s]
        if (x === null || x === undefined) continue
        counts[s]!++
        for (let r = 0; r < resamples; r++) {
          sums[s]![r]! += w[r]! * x
          weights[s]![r]! += w[r]!
        }
      }
    },
    intervals: (level = 0.95) =>
      sums.map((sum, s) => {
        if (counts[s]! < 2) return null
        const means: Array<number> = []
        for (let r = 0; r < resamples; r++) if (weights[s]![r]! > 0) means.push(sum[r]! / weights[s]![r]!)
        means.sort((a, b) => a - b)
        return { lower: quantileSorted(means, (1 - level) / 2), upper: quantileSorted(means, (1 + level) / 2) }
      })
  }
}

/** Items as runs give them: many zeros and nulls, fractions, counts, negatives, now and then ±Infinity or NaN. */
const items = (n: number, statistics: number, seed: number, special: boolean) => {
  const prng = makePrng(seed)
  return Array.from({ length: n }, () => {
    const allNull = prng.nextFloat() < 0.03
    return Array.from({ length: statistics }, (_, s): number | null => {
      const u = prng.nextFloat()
      if (allNull || (s % 4 === 3 && u < 0.6) || u < 0.08) return null
      if (u < 0.5) return s % 5 === 0 && u < 0.1 ? -0 : 0
      if (special && u > 0.9985) return u > 0.9995 ? Infinity : u > 0.999 ? -Infinity : NaN
      if (s % 6 === 5) return Math.floor(u * 7) - 2
      return Math.round(u * 12) / 12
    })
  })
}

describe("poissonBootstrap", () => {
  for (
    const [n, statistics, seed, resamples, special] of [
      // Nulls at random: hundreds of sets of statistics, so the grouped weights are folded mid-way.
      [400, 19, 1, 1_000, false],
      // More statistics than a bit mask holds: their sets keyed by the list of them.
      [200, 40, 6, 300, true],
      [250, 7, 2, 300, true],
      [60, 3, 3, 1_000, true],
      [1, 4, 4, 200, false],
      [900, 1, 5, 500, false]
    ] as const
  ) {
    it(
      `gives the plain rule's intervals bit for bit (${n} items, ${statistics} statistics, ${resamples} resamples${
        special ? ", with ±Infinity and NaN" : ""
      })`,
      () => {
        const fast = poissonBootstrap(statistics, { seed, resamples })
        const plain = reference(statistics, seed, resamples)
        for (const values of items(n, statistics, seed * 7919, special)) {
          fast.add(values)
          plain.add(values)
        }
        for (const level of [0.95, 0.5]) {
          const got = fast.intervals(level)
          const want = plain.intervals(level)
          expect(got.length).toBe(statistics)
          got.forEach((g, s) => {
            const w = want[s]!
            if (w === null) expect(g).toBeNull()
            else {
              expect(Object.is(g!.lower, w.lower) && Object.is(g!.upper, w.upper)).toBe(true)
            }
          })
        }
        // Not vacuous: a run this size has finite intervals to compare.
        if (n > 100) expect(fast.intervals().some((iv) => iv !== null && Number.isFinite(iv.lower))).toBe(true)
      }
    )
  }

  it("saves its sums resample-major ([resample × statistic], a resume's snapshot format) and goes on from a save as if never stopped", () => {
    const [S, R] = [5, 300]
    const rows = items(300, S, 13, true)
    const whole = poissonBootstrap(S, { seed: 4, resamples: R })
    const plain = reference(S, 4, R)
    let resumed = poissonBootstrap(S, { seed: 4, resamples: R })
    rows.forEach((r, i) => {
      whole.add(r)
      plain.add(r)
      resumed.add(r)
      if (i === 150) resumed = poissonBootstrap(S, { seed: 4, resamples: R }, resumed.save())
    })
    const saved = whole.save()
    for (let r = 0; r < R; r++) {
      for (let s = 0; s < S; s++) expect(Object.is(saved.sums[r * S + s], plain.sums[s]![r])).toBe(true)
    }
    expect(resumed.intervals()).toEqual(whole.intervals())
    expect(resumed.save()).toEqual(saved)
    // A state whose Σw is held as `shared` less `missed` (as earlier versions saved it) reads the same.
    const shared = new Float64Array(R)
    const missed = new Float64Array(R * S)
    for (let r = 0; r < R; r++) {
      for (let s = 0; s < S; s++) shared[r] = Math.max(shared[r]!, saved.own[r * S + s]!)
      for (let s = 0; s < S; s++) missed[r * S + s] = shared[r]! - saved.own[r * S + s]!
    }
    expect(missed.some((m) => m > 0)).toBe(true)
    const older = { ...saved, own: new Float64Array(R * S), shared, missed }
    expect(poissonBootstrap(S, { seed: 4, resamples: R }, older).intervals()).toEqual(whole.intervals())
  })

  it("skips an item with no value and draws nothing for it: the next items' intervals are unchanged", () => {
    const a = poissonBootstrap(2, { seed: 9, resamples: 200 })
    const b = poissonBootstrap(2, { seed: 9, resamples: 200 })
    const rows = items(50, 2, 11, false).filter((r) => r.some((v) => v !== null))
    rows.forEach((r, i) => {
      a.add(r)
      b.add(r)
      if (i % 5 === 0) b.add([null, null])
    })
    expect(b.intervals()).toEqual(a.intervals())
  })
})
