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
import { makePrng, type PrngState, quantileSorted } from "./Paired.js"

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

/**
 * The inversion as integer comparisons: a uniform is u / 2³² for a 32-bit u, and u / 2³² ≥ c exactly
 * when u ≥ ⌈c · 2³²⌉ (scaling by a power of two is exact), so k = the thresholds u reaches — the same
 * draw as comparing `nextFloat()` with the table, without the division.
 */
const THRESHOLDS: ReadonlyArray<number> = POISSON1_CDF.slice(0, -1).map((c) => Math.ceil(c * 2 ** 32))

export interface MeanInterval {
  readonly lower: number
  readonly upper: number
}

export interface PoissonBootstrap {
  /** Adds one item: its value per statistic (null: the item has no value for that statistic). */
  add(values: ReadonlyArray<number | null>): void
  /** Per statistic, the percentile interval of the mean at `level`; null with fewer than two values. */
  intervals(level?: number): ReadonlyArray<MeanInterval | null>
  /** The running state (a copy), for `poissonBootstrap(…, saved)` to go on from (a resume's snapshot). */
  save(): BootstrapState
}

/** What a bootstrap has folded: plain data (structured-cloneable), sized for its statistics and resamples. */
export interface BootstrapState {
  readonly prng: PrngState
  readonly sums: Float64Array
  readonly own: Float64Array
  readonly missed: Float64Array
  readonly shared: Float64Array
  readonly counts: ReadonlyArray<number>
}

export const defaultResamples = 1_000

/**
 * The running sums are kept flat (`[resample × statistic]`) and a case adds only what changes them:
 * - Σ w·x only for its values that are not 0 (a sum starts at +0 and never becomes −0, so adding the
 *   ±0 of w·0 changes nothing) and only in the resamples that hold it (w > 0, about 63% of them);
 * - Σ w, which depends only on which statistics the case has, either per statistic it has, or — when
 *   it has more than it lacks — once for the case (`shared`) less what the statistics it lacks would
 *   have taken (`missed`). Weights are small integers, so these sums are exact in any order.
 * The intervals are bit for bit those of adding w·x and w to every statistic's sums (`Bootstrap.test.ts`).
 */
export const poissonBootstrap = (
  statistics: number,
  options: { readonly seed: number; readonly resamples?: number },
  /** Go on from a state `save()` gave (same statistics and resamples; a state of another size throws). */
  saved?: BootstrapState
): PoissonBootstrap => {
  const resamples = Math.max(1, Math.floor(options.resamples ?? defaultResamples))
  const S = statistics
  if (
    saved !== undefined && (saved.sums.length !== resamples * S || saved.own.length !== resamples * S ||
      saved.missed.length !== resamples * S || saved.shared.length !== resamples || saved.counts.length !== S)
  ) {
    throw new Error(`a saved bootstrap of another size (${saved.counts.length} statistics)`)
  }
  const prng = makePrng(options.seed, saved?.prng)
  const sums = saved === undefined ? new Float64Array(resamples * S) : saved.sums.slice()
  /** Σ w per statistic: `own` + `shared` − `missed`. */
  const own = saved === undefined ? new Float64Array(resamples * S) : saved.own.slice()
  const missed = saved === undefined ? new Float64Array(resamples * S) : saved.missed.slice()
  const shared = saved === undefined ? new Float64Array(resamples) : saved.shared.slice()
  const counts = saved === undefined ? new Array<number>(S).fill(0) : [...saved.counts]
  const w = new Float64Array(resamples)
  /** The resamples that hold the item (w > 0). */
  const held = new Int32Array(resamples)
  const present = new Int32Array(S)
  const absent = new Int32Array(S)
  const nonZero = new Int32Array(S)
  const xs = new Float64Array(S)
  const [t0, t1] = [THRESHOLDS[0]!, THRESHOLDS[1]!]
  return {
    add: (values) => {
      let nPresent = 0
      let nAbsent = 0
      let nNonZero = 0
      let nonFinite = false
      for (let s = 0; s < S; s++) {
        const x = values[s]
        if (x === null || x === undefined) {
          absent[nAbsent++] = s
          continue
        }
        present[nPresent++] = s
        counts[s]!++
        if (!Number.isFinite(x)) nonFinite = true
        else if (x !== 0) {
          nonZero[nNonZero] = s
          xs[nNonZero++] = x
        }
      }
      if (values.every((v) => v === null)) return
      let nHeld = 0
      for (let r = 0; r < resamples; r++) {
        const u = prng.nextUint32()
        let k = u < t0 ? 0 : u < t1 ? 1 : 2
        if (k === 2) { while (k < THRESHOLDS.length && u >= THRESHOLDS[k]!) k++ }
        w[r] = k
        if (k > 0) held[nHeld++] = r
      }
      if (nonFinite) {
        // 0 · ±Infinity or NaN is NaN: every resample takes it.
        for (let p = 0; p < nPresent; p++) {
          const s = present[p]!
          const x = values[s]!
          if (!Number.isFinite(x)) { for (let r = 0; r < resamples; r++) sums[r * S + s]! += w[r]! * x }
        }
      }
      const perStatistic = nPresent <= nAbsent + 1
      for (let i = 0; i < nHeld; i++) {
        const r = held[i]!
        const k = w[r]!
        const base = r * S
        for (let a = 0; a < nNonZero; a++) sums[base + nonZero[a]!]! += k * xs[a]!
        if (perStatistic) {
          for (let p = 0; p < nPresent; p++) own[base + present[p]!]! += k
        } else {
          shared[r]! += k
          for (let m = 0; m < nAbsent; m++) missed[base + absent[m]!]! += k
        }
      }
    },
    save: () => ({
      prng: prng.state(),
      sums: sums.slice(),
      own: own.slice(),
      missed: missed.slice(),
      shared: shared.slice(),
      counts: [...counts]
    }),
    intervals: (level = 0.95) =>
      counts.map((n, s) => {
        if (n < 2) return null
        const means: Array<number> = []
        for (let r = 0; r < resamples; r++) {
          const at = r * S + s
          const weight = own[at]! + shared[r]! - missed[at]!
          if (weight > 0) means.push(sums[at]! / weight)
        }
        means.sort((a, b) => a - b)
        return { lower: quantileSorted(means, (1 - level) / 2), upper: quantileSorted(means, (1 + level) / 2) }
      })
  }
}
