/**
 * Paired comparison of two systems on the same cases (SPEC §7): the difference of each case is
 * dᵢ = bᵢ − aᵢ (system B minus system A), and every test asks whether the mean difference is 0.
 * Pure functions; randomness comes only from the seeded generator below, so results are reproducible.
 *
 * - Paired t-test: d̄ = Σdᵢ/n, s = √(Σ(dᵢ − d̄)²/(n − 1)), t = d̄ / (s/√n), df = n − 1,
 *   two-sided p = P(|T_df| ≥ |t|) = I_{df/(df+t²)}(df/2, 1/2) (regularized incomplete beta).
 * - Randomisation (sign-flip permutation) test: under H₀ each dᵢ is as likely to be −dᵢ; the
 *   statistic is |Σdᵢ| (equivalent to |t|, since Σdᵢ² does not change when signs flip).
 * - Bootstrap: resample the n differences with replacement, take the mean; percentile CI.
 * - Wins / ties / losses from B's side.
 */

// ---------------------------------------------------------------------------------------------
// Seeded pseudo-random numbers

/** A deterministic stream of uniform 32-bit unsigned integers. */
export interface Prng {
  /** Next uniform integer in [0, 2³²). */
  readonly nextUint32: () => number
  /** Next uniform integer in [0, n), unbiased (rejection sampling), for 1 ≤ n ≤ 2³². */
  readonly nextInt: (n: number) => number
  /** `out.length` draws of `nextInt(n)`, in order, into `out` (n ≤ 2³²): the same numbers, without a call each. */
  readonly fillInts: (n: number, out: Uint32Array) => void
  /**
   * `out.length` draws of `nextUint32`, in order, into `out`: the same numbers, the state in locals for
   * the loop (a closure's `let` words are context slots, and an int32 outside the small-integer range
   * stored there is a heap number: a draw allocated; in locals a draw takes under 2 ns).
   */
  readonly fillUint32: (out: Uint32Array) => void
  /** Next uniform float in [0, 1) with 32 random bits. */
  readonly nextFloat: () => number
  /** The generator's state now: `makePrng(seed, state)` goes on from here (a resume's snapshot). */
  readonly state: () => PrngState
}

/** xoshiro128**'s four state words (int32). */
export type PrngState = readonly [number, number, number, number]

const TWO_32 = 4294967296

/**
 * Mulberry32 (Tommy Ettinger): a 32-bit counter stepped by 0x6D2B79F5, then mixed.
 * Only used to expand the seed into xoshiro's 128-bit state.
 */
const mulberry32 = (seed: number): () => number => {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let z = state
    z = Math.imul(z ^ (z >>> 15), z | 1)
    z ^= z + Math.imul(z ^ (z >>> 7), z | 61)
    return (z ^ (z >>> 14)) >>> 0
  }
}

/**
 * Seeded uniform floats in [0, 1): mulberry32's output over 2³² — for simulations and generated
 * data where a plain stream of numbers will do (the statistics use `makePrng`).
 */
export const mulberry32Floats = (seed: number): () => number => {
  const next = mulberry32(seed)
  return () => next() / TWO_32
}

/**
 * xoshiro128** (Blackman & Vigna 2018): 128-bit state, period 2¹²⁸ − 1, seeded from an integer by
 * four outputs of mulberry32 (the seed is taken modulo 2³², negative seeds wrap; an all-zero
 * state, which xoshiro cannot leave, becomes s0 = 1).
 *   result = rotl(s1 · 5, 7) · 9;  t = s1 << 9;  s2 ^= s0; s3 ^= s1; s1 ^= s2; s0 ^= s3; s2 ^= t;
 *   s3 = rotl(s3, 11)   (all arithmetic mod 2³²)
 */
export const makePrng = (seed: number, from?: PrngState): Prng => {
  const init = mulberry32(Number.isFinite(seed) ? ((Math.trunc(seed) % TWO_32) + TWO_32) % TWO_32 : 0)
  const start: PrngState = from ?? [init(), init(), init(), init()]
  let s0 = start[0] | 0
  let s1 = start[1] | 0
  let s2 = start[2] | 0
  let s3 = start[3] | 0
  if ((s0 | s1 | s2 | s3) === 0) s0 = 1
  // State words are kept as int32 (bitwise results); only the output is made unsigned.
  const nextUint32 = (): number => {
    const x = Math.imul(s1, 5)
    const result = Math.imul((x << 7) | (x >>> 25), 9) >>> 0
    const t = s1 << 9
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = (s3 << 11) | (s3 >>> 21)
    return result
  }
  // Integers in [0, n): the first draw u below `limit`, the largest multiple of n not above 2³² (so u
  // mod n is exactly uniform), then u mod n as u − ⌊u/n⌋·n — the same number (u < 2³²: the quotient's
  // rounding error is below 1/n, so the floor is exact) without a float `%`, which is a runtime call;
  // the limit is kept for the last n asked. With `fillInts`, a bootstrap's draw and add went from ~26 to
  // ~6 ns (4·10⁷ of them over 20,000 differences, tsx on the 2-core development VM).
  let limitOf = 0
  let limit = 0
  const limitFor = (n: number) => {
    if (n !== limitOf) {
      limitOf = n
      limit = TWO_32 - (TWO_32 % n)
    }
  }
  const below = (n: number): number => {
    let u = nextUint32()
    while (u >= limit) u = nextUint32()
    return u - Math.floor(u / n) * n
  }
  const nextInt = (n: number): number => {
    limitFor(n)
    return below(n)
  }
  const fillInts = (n: number, out: Uint32Array): void => {
    limitFor(n)
    for (let i = 0; i < out.length; i++) out[i] = below(n)
  }
  // `nextUint32`'s step again, on locals: written twice for speed, held to one stream by
  // `Paired.test.ts` (the same draws, and the state after them).
  const fillUint32 = (out: Uint32Array): void => {
    let a = s0
    let b = s1
    let c = s2
    let d = s3
    for (let i = 0; i < out.length; i++) {
      const x = Math.imul(b, 5)
      out[i] = Math.imul((x << 7) | (x >>> 25), 9)
      const t = b << 9
      c ^= a
      d ^= b
      b ^= c
      a ^= d
      c ^= t
      d = (d << 11) | (d >>> 21)
    }
    s0 = a
    s1 = b
    s2 = c
    s3 = d
  }
  return {
    nextUint32,
    nextInt,
    fillInts,
    fillUint32,
    nextFloat: () => nextUint32() / TWO_32,
    state: () => [s0, s1, s2, s3]
  }
}

// ---------------------------------------------------------------------------------------------
// Student t distribution via the regularized incomplete beta function

/**
 * ln Γ(x) for x > 0: Lanczos approximation with g = 671/128 and 14 terms (Numerical Recipes, 3rd
 * ed., §6.1), relative error below 1e-15.
 */
export const logGamma = (x: number): number => {
  const cof = [
    57.1562356658629235,
    -59.5979603554754912,
    14.1360979747417471,
    -0.491913816097620199,
    0.339946499848118887e-4,
    0.465236289270485756e-4,
    -0.983744753048795646e-4,
    0.158088703224912494e-3,
    -0.210264441724104883e-3,
    0.217439618115212643e-3,
    -0.164318106536763890e-3,
    0.844182239838527433e-4,
    -0.261908384015814087e-4,
    0.368991826595316234e-5
  ]
  let y = x
  const tmp0 = x + 5.2421875
  const tmp = (x + 0.5) * Math.log(tmp0) - tmp0
  let ser = 0.999999999999997092
  for (const c of cof) ser += c / ++y
  return tmp + Math.log((2.5066282746310005 * ser) / x)
}

/**
 * Continued fraction of I_x(a, b) (Numerical Recipes §6.4, modified Lentz), converging fast for
 * x < (a + 1)/(a + b + 2). Needs O(√max(a, b)) terms.
 */
const betaContinuedFraction = (a: number, b: number, x: number): number => {
  const tiny = 1e-300
  const eps = 1e-16
  const qab = a + b
  const qap = a + 1
  const qam = a - 1
  let c = 1
  let d = 1 - (qab * x) / qap
  if (Math.abs(d) < tiny) d = tiny
  d = 1 / d
  let h = d
  for (let m = 1; m <= 100_000; m++) {
    const m2 = 2 * m
    let aa = (m * (b - m) * x) / ((qam + m2) * (a + m2))
    d = 1 + aa * d
    if (Math.abs(d) < tiny) d = tiny
    c = 1 + aa / c
    if (Math.abs(c) < tiny) c = tiny
    d = 1 / d
    h *= d * c
    aa = (-(a + m) * (qab + m) * x) / ((a + m2) * (qap + m2))
    d = 1 + aa * d
    if (Math.abs(d) < tiny) d = tiny
    c = 1 + aa / c
    if (Math.abs(c) < tiny) c = tiny
    d = 1 / d
    const del = d * c
    h *= del
    if (Math.abs(del - 1) <= eps) break
  }
  return h
}

/**
 * Regularized incomplete beta I_x(a, b) = B(x; a, b) / B(a, b) for a, b > 0, 0 ≤ x ≤ 1, with
 * `y` = 1 − x given separately when the caller knows it exactly (avoids cancellation near 1).
 *   I_x(a, b) = xᵃ (1 − x)ᵇ / (a B(a, b)) · CF(a, b, x)      when x < (a + 1)/(a + b + 2)
 *             = 1 − I_{1−x}(b, a)                            otherwise
 */
export const regularizedIncompleteBeta = (x: number, a: number, b: number, y: number = 1 - x): number => {
  if (x <= 0) return 0
  if (y <= 0) return 1
  const lnFront = logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log(y)
  const front = Math.exp(lnFront)
  if (x < (a + 1) / (a + b + 2)) return (front * betaContinuedFraction(a, b, x)) / a
  return 1 - (front * betaContinuedFraction(b, a, y)) / b
}

/**
 * Two-sided tail of Student's t with `df` degrees of freedom: P(|T| ≥ |t|) = I_{df/(df+t²)}(df/2, 1/2).
 * t = ±∞ → 0; t = 0 → 1.
 */
export const studentTTwoSided = (t: number, df: number): number => {
  if (Number.isNaN(t)) return Number.NaN
  if (!Number.isFinite(t)) return 0
  const t2 = t * t
  return Math.min(1, regularizedIncompleteBeta(df / (df + t2), df / 2, 0.5, t2 / (df + t2)))
}

/** Student's t CDF: P(T ≤ t) = ½ · I_{df/(df+t²)}(df/2, 1/2) for t ≤ 0, 1 − that for t > 0. */
export const studentTCdf = (t: number, df: number): number => {
  const tail = studentTTwoSided(t, df) / 2
  return t <= 0 ? tail : 1 - tail
}

// ---------------------------------------------------------------------------------------------
// Paired tests

const differences = (a: ReadonlyArray<number>, b: ReadonlyArray<number>): Array<number> => {
  const n = Math.min(a.length, b.length)
  const d: Array<number> = new Array(n)
  for (let i = 0; i < n; i++) d[i] = b[i]! - a[i]!
  return d
}

const sum = (xs: ReadonlyArray<number>): number => {
  let s = 0
  for (const x of xs) s += x
  return s
}

export interface TTest {
  readonly n: number
  /** d̄ = mean of B − A; null when n = 0. */
  readonly meanDifference: number | null
  /** Sample standard deviation of the differences; null when n < 2. */
  readonly sdDifference: number | null
  /** t = d̄ / (s/√n); ±Infinity when s = 0 and d̄ ≠ 0, 0 when every difference is 0; null when n < 2. */
  readonly t: number | null
  readonly df: number | null
  /** Two-sided p; null when n < 2. */
  readonly p: number | null
}

/**
 * Paired t-test of B against A over the same cases (`a[i]` and `b[i]` are one case). See the module
 * comment for the formula. Zero variance: every difference equal — p = 1 when they are all 0
 * (nothing differs), p = 0 when they are not (t = ±∞). n < 2: t and p are null.
 */
export const pairedTTest = (a: ReadonlyArray<number>, b: ReadonlyArray<number>): TTest => {
  const d = differences(a, b)
  const n = d.length
  if (n === 0) return { n, meanDifference: null, sdDifference: null, t: null, df: null, p: null }
  const mean = sum(d) / n
  if (n < 2) return { n, meanDifference: mean, sdDifference: null, t: null, df: null, p: null }
  let ss = 0
  for (const x of d) ss += (x - mean) ** 2
  const sd = Math.sqrt(ss / (n - 1))
  const df = n - 1
  if (sd === 0) {
    return mean === 0
      ? { n, meanDifference: 0, sdDifference: 0, t: 0, df, p: 1 }
      : { n, meanDifference: mean, sdDifference: 0, t: mean > 0 ? Infinity : -Infinity, df, p: 0 }
  }
  const t = mean / (sd / Math.sqrt(n))
  return { n, meanDifference: mean, sdDifference: sd, t, df, p: studentTTwoSided(t, df) }
}

export interface RandomisationOptions {
  readonly seed: number
  /** Random sign vectors drawn (default 10,000). When 2ⁿ ≤ permutations every vector is enumerated. */
  readonly permutations?: number
}

export interface RandomisationTest {
  readonly n: number
  readonly meanDifference: number | null
  /** Two-sided p; null when n = 0. */
  readonly p: number | null
  /** Sign vectors evaluated (2ⁿ when exact). */
  readonly permutations: number
  /** True when all 2ⁿ sign vectors were enumerated (p is then exact, not an estimate). */
  readonly exact: boolean
}

export const defaultPermutations = 10_000

/**
 * Two-sided sign-flip randomisation test of mean(B − A) = 0.
 * Statistic T = |Σ sᵢ dᵢ| over sign vectors s ∈ {−1, +1}ⁿ, observed T₀ = |Σ dᵢ|.
 * - Exact when 2ⁿ ≤ permutations: p = #{s : T(s) ≥ T₀} / 2ⁿ (the identity is one of them).
 * - Otherwise Monte Carlo with R = permutations random sign vectors (one bit of a 32-bit draw per
 *   case): p = (1 + #{T(s) ≥ T₀}) / (1 + R) (Phipson & Smyth 2010: never 0, valid at any R).
 * "≥" allows a rounding slack of 1e-10 · Σ|dᵢ|, so sums equal in exact arithmetic count as ties.
 * Every difference 0 → p = 1.
 */
export const randomisationTest = (
  a: ReadonlyArray<number>,
  b: ReadonlyArray<number>,
  options: RandomisationOptions
): RandomisationTest => {
  const d = differences(a, b)
  const n = d.length
  const permutations = Math.max(1, Math.floor(options.permutations ?? defaultPermutations))
  if (n === 0) return { n, meanDifference: null, p: null, permutations: 0, exact: false }
  const observed = Math.abs(sum(d))
  let scale = 0
  for (const x of d) scale += Math.abs(x)
  const meanDifference = sum(d) / n
  if (scale === 0) return { n, meanDifference, p: 1, permutations: 0, exact: true }
  const threshold = observed - 1e-10 * scale
  if (n < 31 && 2 ** n <= permutations) {
    const total = 2 ** n
    let hits = 0
    for (let mask = 0; mask < total; mask++) {
      let s = 0
      for (let i = 0; i < n; i++) s += (mask >>> i) & 1 ? -d[i]! : d[i]!
      if (Math.abs(s) >= threshold) hits++
    }
    return { n, meanDifference, p: hits / total, permutations: total, exact: true }
  }
  const prng = makePrng(options.seed)
  // Case i's sign is bit i % 32 of the vector's (⌊i / 32⌋ + 1)-th draw. A difference of 0 adds ±0,
  // which changes no sum, so only the others are summed (in case order): a comparison where most
  // cases did not move costs what its moved cases do, and p is the one summing all n gives.
  const moved: Array<number> = []
  for (let i = 0; i < n; i++) if (d[i] !== 0) moved.push(i)
  const words = new Uint32Array(Math.ceil(n / 32))
  let hits = 0
  for (let r = 0; r < permutations; r++) {
    for (let w = 0; w < words.length; w++) words[w] = prng.nextUint32()
    let s = 0
    for (let k = 0; k < moved.length; k++) {
      const i = moved[k]!
      // × (1 − 2·bit) is the sign flip exactly (x · −1 = −x), without a branch the random bits would mispredict.
      s += d[i]! * (1 - 2 * ((words[i >>> 5]! >>> (i & 31)) & 1))
    }
    if (Math.abs(s) >= threshold) hits++
  }
  return { n, meanDifference, p: (1 + hits) / (1 + permutations), permutations, exact: false }
}

/**
 * The smallest two-sided p the sign-flip test can give over `n` paired cases — when every
 * difference has the same sign, only the observed sign vector and its mirror image reach |Σdᵢ|:
 * exact (2ⁿ ≤ permutations) p = 2/2ⁿ; Monte Carlo p = 1/(1 + R). n = 0: 1.
 */
export const smallestRandomisationP = (n: number, permutations: number = defaultPermutations): number => {
  const r = Math.max(1, Math.floor(permutations))
  if (n <= 0) return 1
  return n < 31 && 2 ** n <= r ? 2 / 2 ** n : 1 / (1 + r)
}

/**
 * The fewest paired cases with which the sign-flip test can reject at `alpha` (p < α), whatever
 * the data: at α = 0.05, 6 (2/2⁶ = 0.031; with 5, 2/2⁵ = 0.0625); at α = 0.01, 8. Undefined when
 * no number of cases can (Monte Carlo with so few permutations that 1/(1 + R) ≥ α).
 */
export const minimumPairedCases = (alpha: number, permutations: number = defaultPermutations): number | undefined => {
  for (let n = 1; n <= 64; n++) if (smallestRandomisationP(n, permutations) < alpha) return n
  return undefined
}

export interface BootstrapOptions {
  readonly seed: number
  /** Bootstrap resamples (default 10,000). */
  readonly resamples?: number
  /** Confidence level (default 0.95). */
  readonly level?: number
}

export interface BootstrapCi {
  readonly n: number
  readonly meanDifference: number | null
  /** null when n = 0. */
  readonly lower: number | null
  readonly upper: number | null
  readonly level: number
  readonly resamples: number
}

export const defaultResamples = 10_000

/**
 * Linear-interpolation quantile of sorted values (Hyndman & Fan type 7, numpy's default):
 * h = (m − 1)·q, Q = x[⌊h⌋] + (h − ⌊h⌋)(x[⌊h⌋ + 1] − x[⌊h⌋]).
 */
export const quantileSorted = (sorted: ReadonlyArray<number>, q: number): number => {
  const m = sorted.length
  if (m === 0) return Number.NaN
  const h = (m - 1) * Math.min(1, Math.max(0, q))
  const lo = Math.floor(h)
  const x = sorted[lo]!
  return lo + 1 < m ? x + (h - lo) * (sorted[lo + 1]! - x) : x
}

/**
 * Percentile bootstrap CI of mean(B − A): R resamples of n differences drawn with replacement
 * (uniform indices from the seeded generator), each resample's mean m_r; the interval is the
 * (1 − level)/2 and (1 + level)/2 quantiles (type 7) of the sorted m_r. n = 1: the interval is
 * the single difference.
 */
export const bootstrapCi = (
  a: ReadonlyArray<number>,
  b: ReadonlyArray<number>,
  options: BootstrapOptions
): BootstrapCi => {
  const d = differences(a, b)
  const n = d.length
  const level = options.level ?? 0.95
  const resamples = Math.max(1, Math.floor(options.resamples ?? defaultResamples))
  if (n === 0) return { n, meanDifference: null, lower: null, upper: null, level, resamples: 0 }
  const meanDifference = sum(d) / n
  const means = new Float64Array(resamples)
  if (d.every((x) => Object.is(x, d[0]))) {
    // Every difference the same (every case unchanged: 0): every resample sums that value n times,
    // whichever cases it draws — the sum `meanDifference` was made of, in the same order.
    means.fill(meanDifference)
  } else {
    const prng = makePrng(options.seed)
    const drawn = new Uint32Array(n)
    for (let r = 0; r < resamples; r++) {
      prng.fillInts(n, drawn)
      let s = 0
      for (let i = 0; i < n; i++) s += d[drawn[i]!]!
      means[r] = s / n
    }
  }
  means.sort()
  const sorted = Array.from(means)
  return {
    n,
    meanDifference,
    lower: quantileSorted(sorted, (1 - level) / 2),
    upper: quantileSorted(sorted, (1 + level) / 2),
    level,
    resamples
  }
}

export interface WinsTiesLosses {
  /** Cases where B scores higher than A. */
  readonly wins: number
  /** |B − A| ≤ tolerance. */
  readonly ties: number
  /** Cases where B scores lower than A. */
  readonly losses: number
}

/**
 * Per-case outcome from B's side. Differences within `tolerance` (default 1e-12, to absorb float
 * noise in averaged or recomputed scores) are ties.
 */
export const winsTiesLosses = (
  a: ReadonlyArray<number>,
  b: ReadonlyArray<number>,
  tolerance = 1e-12
): WinsTiesLosses => {
  let wins = 0
  let ties = 0
  let losses = 0
  for (const x of differences(a, b)) {
    if (Math.abs(x) <= tolerance) ties++
    else if (x > 0) wins++
    else losses++
  }
  return { wins, ties, losses }
}
