/**
 * Percentile bootstrap of statistics that depend on paired items only through their contingency
 * table (every statistic of `Kappa.ts`): a resample of the N pairs drawn with replacement is, as far
 * as such a statistic can tell, its table of counts — and that table is Multinomial(N, C / N). So a
 * resample is drawn as the table directly, cell by cell with conditional binomials,
 *   X₁ ~ Bin(N, C₁/N),  X₂ ~ Bin(N − X₁, C₂/(N − C₁)),  …,  X_last = what is left,
 * which is the same distribution as drawing N indices and counting, at a cost that does not grow
 * with N (K² binomial draws, each O(√(N p (1 − p))) steps) — a million pairs bootstrap as fast as a
 * thousand.
 *
 * The CI is the percentile interval: the (1 − level)/2 and (1 + level)/2 quantiles (type 7, as
 * numpy's default and `Paired.ts`) of the statistic over the resamples. Resamples where the
 * statistic is undefined (null) are left out and counted.
 */
import type { ContingencyTable, Value } from "./Kappa.js"
import { logGamma, makePrng, type Prng, quantileSorted } from "./Paired.js"

const TWO_26 = 67108864
const TWO_53 = 9007199254740992

/** A uniform float in [0, 1) with 53 random bits: 27 from one 32-bit draw, 26 from the next. */
export const uniform53 = (prng: Prng): number =>
  ((prng.nextUint32() >>> 5) * TWO_26 + (prng.nextUint32() >>> 6)) / TWO_53

/**
 * One draw from Binomial(n, p) by inversion of one uniform u:
 * - n·p < 20 (after using the symmetry Bin(n, p) = n − Bin(n, 1 − p) to make p ≤ ½): walk up from 0,
 *   f(0) = (1 − p)ⁿ, f(k + 1) = f(k) · (n − k)/(k + 1) · p/(1 − p), until the cumulative mass passes u;
 * - otherwise start at the mode m = ⌊(n + 1)p⌋, f(m) from log-gamma, and take mass alternately below
 *   and above it (f(k − 1) = f(k) · k/(n − k + 1) · (1 − p)/p) until u is used up. Any fixed order of
 *   the outcomes gives an exact sampler; this one needs O(√(n p (1 − p))) steps on average.
 */
export const sampleBinomial = (n: number, p: number, prng: Prng): number => {
  if (n <= 0 || p <= 0) return 0
  if (p >= 1) return n
  if (p > 0.5) return n - sampleBinomial(n, 1 - p, prng)
  const q = 1 - p
  const ratio = p / q
  let u = uniform53(prng)
  if (n * p < 20) {
    let k = 0
    let f = Math.exp(n * Math.log1p(-p))
    while (u >= f && k < n) {
      u -= f
      f *= ((n - k) / (k + 1)) * ratio
      k++
    }
    return k
  }
  const mode = Math.floor((n + 1) * p)
  const fMode = Math.exp(
    logGamma(n + 1) - logGamma(mode + 1) - logGamma(n - mode + 1) + mode * Math.log(p) + (n - mode) * Math.log1p(-p)
  )
  u -= fMode
  if (u < 0) return mode
  let lo = mode
  let hi = mode
  let fLo = fMode
  let fHi = fMode
  while (lo > 0 || hi < n) {
    if (lo > 0) {
      fLo *= lo / (n - lo + 1) / ratio
      lo--
      u -= fLo
      if (u < 0) return lo
    }
    if (hi < n) {
      fHi *= ((n - hi) / (hi + 1)) * ratio
      hi++
      u -= fHi
      if (u < 0) return hi
    }
  }
  // Only reachable when rounding left the masses summing to a hair under u.
  return mode
}

/** A bootstrap resample of the table: Multinomial(N, C/N) by conditional binomials (module comment). */
export const resampleTable = (table: ContingencyTable, prng: Prng): ContingencyTable => {
  const counts = table.counts
  const out = new Float64Array(counts.length)
  let remaining = 0
  for (const c of counts) remaining += c
  let mass = remaining
  for (let i = 0; i < counts.length && remaining > 0; i++) {
    const c = counts[i]!
    if (c === 0) continue
    const draw = c >= mass ? remaining : sampleBinomial(remaining, c / mass, prng)
    out[i] = draw
    remaining -= draw
    mass -= c
  }
  return { grades: table.grades, counts: out }
}

export interface BootstrapOptions {
  readonly seed: number
  /** Resamples (default 10,000). */
  readonly resamples?: number
  /** Confidence level (default 0.95). */
  readonly level?: number
}

export const defaultBootstrapResamples = 10_000

export interface Interval {
  readonly lower: number
  readonly upper: number
}

export interface BootstrapResult {
  /** Per statistic name: the percentile interval, or null when the statistic is undefined on the data. */
  readonly intervals: ReadonlyArray<Interval | null>
  /** Per statistic: resamples where it was undefined, left out of its interval. */
  readonly undefinedResamples: ReadonlyArray<number>
  readonly resamples: number
  readonly level: number
  readonly seed: number
}

/** Each statistic's percentile interval from its kept draws (none when not wanted or never defined). */
const percentileResult = (
  draws: ReadonlyArray<Float64Array>,
  kept: ReadonlyArray<number>,
  wanted: ReadonlyArray<boolean>,
  resamples: number,
  level: number,
  seed: number
): BootstrapResult => ({
  intervals: draws.map((d, s): Interval | null => {
    if (!wanted[s] || kept[s] === 0) return null
    const sorted = Array.from(d.subarray(0, kept[s]!).sort())
    return { lower: quantileSorted(sorted, (1 - level) / 2), upper: quantileSorted(sorted, (1 + level) / 2) }
  }),
  undefinedResamples: draws.map((_, s) => (wanted[s] ? resamples - kept[s]! : 0)),
  resamples,
  level,
  seed
})

/**
 * Percentile CIs of several statistics of one table, from the same resamples (so the intervals are
 * of one bootstrap). A statistic that is null on the original table gets no interval.
 */
export const bootstrapTable = (
  table: ContingencyTable,
  statistics: ReadonlyArray<(t: ContingencyTable) => Value>,
  options: BootstrapOptions
): BootstrapResult => {
  const resamples = Math.max(1, Math.floor(options.resamples ?? defaultBootstrapResamples))
  const level = options.level ?? 0.95
  const wanted = statistics.map((s) => s(table).value !== null)
  const draws = statistics.map(() => new Float64Array(resamples))
  const kept = statistics.map(() => 0)
  const prng = makePrng(options.seed)
  for (let r = 0; r < resamples; r++) {
    const resample = resampleTable(table, prng)
    for (let s = 0; s < statistics.length; s++) {
      if (!wanted[s]) continue
      const value = statistics[s]!(resample).value
      if (value !== null) draws[s]![kept[s]!++] = value
    }
  }
  return percentileResult(draws, kept, wanted, resamples, level, options.seed)
}

/**
 * Percentile bootstrap over units resampled with replacement, for statistics that are not functions
 * of one contingency table (Pearson's r and Kendall's τ-b of metric values or of preference
 * deltas): each resample draws `units` indices uniformly from the seeded generator, and every
 * statistic is computed from how many times each unit was drawn (`multiplicity[u]`; a unit drawn
 * twice counts twice). A unit is what was sampled — a labelled case, or a pair of answers with all
 * its annotators' labels — so labels that share a unit stay together. Same output as
 * `bootstrapTable`; a statistic null on the data (every multiplicity 1) gets no interval.
 */
export const bootstrapUnits = (
  units: number,
  statistics: ReadonlyArray<(multiplicity: Int32Array) => Value>,
  options: BootstrapOptions
): BootstrapResult => {
  const resamples = Math.max(1, Math.floor(options.resamples ?? defaultBootstrapResamples))
  const level = options.level ?? 0.95
  const identity = new Int32Array(units).fill(1)
  const wanted = statistics.map((s) => units > 0 && s(identity).value !== null)
  const draws = statistics.map(() => new Float64Array(resamples))
  const kept = statistics.map(() => 0)
  const prng = makePrng(options.seed)
  const multiplicity = new Int32Array(units)
  if (wanted.some((w) => w)) {
    for (let r = 0; r < resamples; r++) {
      multiplicity.fill(0)
      for (let i = 0; i < units; i++) multiplicity[prng.nextInt(units)]! += 1
      for (let s = 0; s < statistics.length; s++) {
        if (!wanted[s]) continue
        const value = statistics[s]!(multiplicity).value
        if (value !== null) draws[s]![kept[s]!++] = value
      }
    }
  }
  return percentileResult(draws, kept, wanted, resamples, level, options.seed)
}

/** How many labelled units a CI needs to be no wider than ±`halfWidth`, and how many more than now. */
export interface Narrowing {
  readonly halfWidth: number
  /** Units (labelled items, or pairs) the CI would need; null without a CI or with too few units. */
  readonly needed: number | null
  /** needed − units now (0 when the CI is already that narrow); null when `needed` is. */
  readonly more: number | null
  /** Why `needed` is null. */
  readonly reason?: string
}

/** Below this many units a bootstrap CI says too little about the spread to extrapolate from. */
export const MIN_UNITS_TO_EXTRAPOLATE = 10

/**
 * The labels a CI of `units` units needs to shrink to ±`halfWidth` (the browser review shows it
 * beside each figure): a bootstrap CI of a smooth statistic narrows as 1/√n, so with the CI's
 * half-width w now, n' = ⌈n · (w / halfWidth)²⌉. An estimate — it assumes the statistic's spread
 * per unit stays what it is — and the more useful the closer n' is to n; with fewer than
 * `MIN_UNITS_TO_EXTRAPOLATE` units (a CI of 6 identical pairs is [1, 1]) there is none.
 */
export const narrowing = (ci: Interval | null, units: number, halfWidth = 0.1): Narrowing => {
  if (ci === null || !(halfWidth > 0)) return { halfWidth, needed: null, more: null, reason: "no CI" }
  if (units < MIN_UNITS_TO_EXTRAPOLATE) {
    return {
      halfWidth,
      needed: null,
      more: null,
      reason: `fewer than ${MIN_UNITS_TO_EXTRAPOLATE} labelled units: too few to extrapolate from`
    }
  }
  const w = (ci.upper - ci.lower) / 2
  const needed = w <= halfWidth ? units : Math.ceil(units * (w / halfWidth) ** 2)
  return { halfWidth, needed, more: Math.max(0, needed - units) }
}
