/**
 * Bootstrap confidence intervals of several means, computed online in constant memory: the Poisson
 * bootstrap (Hanley & MacGibbon 2006; Chamandy et al. 2012, "Estimating uncertainty for massive
 * data streams"). Instead of drawing n items with replacement — which needs the items kept — each
 * arriving item gets, in each of R resamples, a weight w ~ Poisson(1) (how many times a
 * with-replacement resample of a large n would hold it), and each resample keeps Σ w·x and Σ w per
 * statistic. The resample's mean is Σ w·x / Σ w; the interval is the percentile interval of the R
 * means (type 7 quantiles, as `Paired.ts`). For n in the tens the Poisson and the classical
 * bootstrap agree closely; both are approximations there.
 *
 * One weight per item and resample serves every statistic (a resample is a resample of cases), so
 * a case costs R draws plus R additions per statistic it has. Seeded: the same items in the same
 * order give the same intervals.
 */
import { makePrng, type Prng, quantileSorted } from "./Paired.js"

/** Poisson(1) by inversion of one uniform: the CDF table up to where it reaches 1 in doubles. */
const POISSON1_CDF: ReadonlyArray<number> = (() => {
  const cdf: Array<number> = []
  let p = Math.exp(-1)
  let sum = 0
  for (let k = 0; k < 20; k++) {
    sum += p
    cdf.push(sum)
    p /= k + 1
  }
  return cdf
})()

const poisson1 = (prng: Prng): number => {
  const u = prng.nextFloat()
  let k = 0
  while (k < POISSON1_CDF.length - 1 && u >= POISSON1_CDF[k]!) k++
  return k
}

export interface MeanInterval {
  readonly lower: number
  readonly upper: number
}

export interface PoissonBootstrap {
  /** Adds one item: its value per statistic (null: the item has no value for that statistic). */
  add(values: ReadonlyArray<number | null>): void
  /** Per statistic, the percentile interval of the mean at `level`; null with fewer than two values. */
  intervals(level?: number): ReadonlyArray<MeanInterval | null>
}

export const defaultResamples = 1_000

export const poissonBootstrap = (
  statistics: number,
  options: { readonly seed: number; readonly resamples?: number }
): PoissonBootstrap => {
  const resamples = Math.max(1, Math.floor(options.resamples ?? defaultResamples))
  const prng = makePrng(options.seed)
  const sums = Array.from({ length: statistics }, () => new Float64Array(resamples))
  const weights = Array.from({ length: statistics }, () => new Float64Array(resamples))
  const counts = new Array<number>(statistics).fill(0)
  const w = new Float64Array(resamples)
  /** The resamples that hold the item (w > 0; about 63% of them): adding 0·x to the others changes nothing. */
  const held = new Int32Array(resamples)
  return {
    add: (values) => {
      if (values.every((v) => v === null)) return
      let nHeld = 0
      for (let r = 0; r < resamples; r++) {
        const k = poisson1(prng)
        w[r] = k
        if (k > 0) held[nHeld++] = r
      }
      for (let s = 0; s < statistics; s++) {
        const x = values[s]
        if (x === null || x === undefined) continue
        counts[s]!++
        const sum = sums[s]!
        const weight = weights[s]!
        if (Number.isFinite(x)) {
          // A sum starts at +0 and never becomes −0, so skipping the +0 or −0 a zero weight adds is exact.
          for (let i = 0; i < nHeld; i++) {
            const r = held[i]!
            sum[r]! += w[r]! * x
            weight[r]! += w[r]!
          }
        } else {
          // 0 · ±Infinity or NaN is NaN: every resample takes it, as before.
          for (let r = 0; r < resamples; r++) {
            sum[r]! += w[r]! * x
            weight[r]! += w[r]!
          }
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
