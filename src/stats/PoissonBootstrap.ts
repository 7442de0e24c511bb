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
import { makePrng, type Prng, type PrngState, quantileSorted } from "./Paired.js"

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

/** The inversion of `u` (the number of thresholds it reaches). */
const poisson1Of = (u: number): number => {
  let k = 0
  while (k < THRESHOLDS.length && u >= THRESHOLDS[k]!) k++
  return k
}

/**
 * The draw of every u with the top byte b, when all of them draw the same (−1 for the few bytes a
 * threshold falls in): one load instead of comparisons whose outcome is random, which the processor
 * mispredicts about once per draw.
 */
const BY_TOP_BYTE: Int8Array = Int8Array.from({ length: 256 }, (_, b) => {
  const low = poisson1Of(b * 2 ** 24)
  return low === poisson1Of(b * 2 ** 24 + 2 ** 24 - 1) ? low : -1
})

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
 * The running sums are kept flat, statistic-major (`[statistic × resample]`: a case's additions to
 * one statistic are one pass over contiguous cells), and a case adds only what changes them:
 * - Σ w·x only for its values that are not 0 (a sum starts at +0 and never becomes −0, so adding the
 *   ±0 of w·0 changes nothing);
 * - Σ w, which depends only on which statistics the case has: summed once per case into the sums of
 *   the cases with the same statistics (a run's cases have a few such sets), which are added to each
 *   of their statistics' `own` when intervals or a save are asked for. (A state saved by an earlier
 *   version may also hold `shared`, added once for a case, less `missed`, what the statistics it
 *   lacked would have taken: kept, and read as such.) Weights are small integers, so these sums are
 *   exact in any order.
 * The intervals are bit for bit those of adding w·x and w to every statistic's sums
 * (`PoissonBootstrap.test.ts`). A class, not closures over the state: V8 specialises a closure's
 * code to its context while only one exists, and a process's second bootstrap (a resume's) ran at
 * two thirds of the first's speed.
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
  return new Online(S, resamples, makePrng(options.seed, saved?.prng), saved)
}

/** Up to this many statistics, a set of them is keyed by a bit mask (an int32); beyond, by their list. */
const MASK_STATISTICS = 31

/** The set of the first `n` statistics of `present` as a bit mask. */
const maskOf = (present: Int32Array, n: number): number => {
  let mask = 0
  for (let p = 0; p < n; p++) mask |= 1 << present[p]!
  return mask
}
/** Sets of statistics kept apart before they are added to `own` (a run's cases have a few). */
const MAX_GROUPS = 64

class Online implements PoissonBootstrap {
  private readonly sums: Float64Array
  /** Σ w per statistic: `own` + `shared` − `missed`. */
  private readonly own: Float64Array
  private readonly missed: Float64Array
  private readonly shared: Float64Array
  private readonly counts: Array<number>
  /** This item's weights, and the draws they come from. */
  private readonly w: Float64Array
  private readonly draws: Uint32Array
  private readonly present: Int32Array
  /** Σ w of the cases with each set of statistics since the last `foldGroups`, by `maskOf` the set (or its list). */
  private readonly groups = new Map<number | string, { statistics: Int32Array; weights: Float64Array }>()

  constructor(
    private readonly S: number,
    private readonly R: number,
    private readonly prng: Prng,
    saved: BootstrapState | undefined
  ) {
    // Saved resample-major, as `BootstrapState` documents (a resume's snapshot format).
    this.sums = fromSaved(saved?.sums, S, R)
    this.own = fromSaved(saved?.own, S, R)
    this.missed = fromSaved(saved?.missed, S, R)
    this.shared = saved === undefined ? new Float64Array(R) : saved.shared.slice()
    this.counts = saved === undefined ? new Array<number>(S).fill(0) : [...saved.counts]
    this.w = new Float64Array(R)
    this.draws = new Uint32Array(R)
    this.present = new Int32Array(S)
  }

  add(values: ReadonlyArray<number | null>): void {
    const { S, R, w, draws, present, counts } = this
    let nPresent = 0
    for (let s = 0; s < S; s++) {
      const x = values[s]
      if (x === null || x === undefined) continue
      present[nPresent++] = s
      counts[s]!++
    }
    if (nPresent === 0) return
    this.prng.fillUint32(draws)
    for (let r = 0; r < R; r++) {
      const u = draws[r]!
      const k = BY_TOP_BYTE[u >>> 24]!
      w[r] = k < 0 ? poisson1Of(u) : k
    }
    for (let p = 0; p < nPresent; p++) {
      const s = present[p]!
      const x = values[s]!
      // 0 · ±Infinity or NaN is NaN: every resample takes it (w = 0 included).
      if (x !== 0 || !Number.isFinite(x)) addWeighted(this.sums, s * R, w, x)
    }
    // Σ w: the weights of every case with the same statistics, summed apart, added to `own` later.
    const key = S <= MASK_STATISTICS ? maskOf(present, nPresent) : present.subarray(0, nPresent).join(",")
    let group = this.groups.get(key)
    if (group === undefined) {
      if (this.groups.size >= MAX_GROUPS) this.foldGroups()
      this.groups.set(key, group = { statistics: present.slice(0, nPresent), weights: new Float64Array(R) })
    }
    addWeighted(group.weights, 0, w, 1)
  }

  /** The grouped weights added to `own` of each statistic of their group (integers: exact in any order). */
  private foldGroups(): void {
    const { R, own } = this
    for (const { statistics, weights } of this.groups.values()) {
      for (const s of statistics) addWeighted(own, s * R, weights, 1)
    }
    this.groups.clear()
  }

  save(): BootstrapState {
    this.foldGroups()
    const { S, R } = this
    return {
      prng: this.prng.state(),
      sums: toSaved(this.sums, S, R),
      own: toSaved(this.own, S, R),
      missed: toSaved(this.missed, S, R),
      shared: this.shared.slice(),
      counts: [...this.counts]
    }
  }

  intervals(level = 0.95): ReadonlyArray<MeanInterval | null> {
    this.foldGroups()
    const { R, sums, own, shared, missed } = this
    return this.counts.map((n, s) => {
      if (n < 2) return null
      const means: Array<number> = []
      for (let r = 0; r < R; r++) {
        const at = s * R + r
        const weight = own[at]! + shared[r]! - missed[at]!
        if (weight > 0) means.push(sums[at]! / weight)
      }
      means.sort((a, b) => a - b)
      return { lower: quantileSorted(means, (1 - level) / 2), upper: quantileSorted(means, (1 + level) / 2) }
    })
  }
}

/**
 * `cells[base + r] += w[r]·x` for every resample r (a weight of 0 adds ±0, which changes no sum). A
 * module function, not a closure: V8 specialises a closure's code to its context while only one
 * exists.
 */
const addWeighted = (cells: Float64Array, base: number, w: Float64Array, x: number) => {
  for (let r = 0; r < w.length; r++) cells[base + r] += w[r]! * x
}

/** A saved `[resample × statistic]` array as the bootstrap keeps it (`[statistic × resample]`); zeros without one. */
const fromSaved = (saved: Float64Array | undefined, S: number, R: number): Float64Array => {
  const cells = new Float64Array(S * R)
  if (saved !== undefined) {
    for (let r = 0; r < R; r++) {
      for (let s = 0; s < S; s++) cells[s * R + r] = saved[r * S + s]!
    }
  }
  return cells
}

/** The bootstrap's `[statistic × resample]` cells as a saved `[resample × statistic]` array. */
const toSaved = (cells: Float64Array, S: number, R: number): Float64Array => {
  const saved = new Float64Array(S * R)
  for (let r = 0; r < R; r++) for (let s = 0; s < S; s++) saved[r * S + s] = cells[s * R + r]!
  return saved
}
