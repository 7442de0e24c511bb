/**
 * Correlation of two paired samples x, y (n pairs): do they order the items the same way? Used by
 * `rag-eval calibrate` to compare per-query (or per-system) NDCG under human and judge grades, a
 * judge's per-case metrics with people's values and metric deltas with people's preferences
 * (`judge-bench`). Each follows scipy.stats, so figures can be checked there.
 *
 * - Kendall's τ-b (scipy `kendalltau`, its default variant): with n₀ = n(n − 1)/2 pairs of items,
 *   n₁ = Σ tᵢ(tᵢ − 1)/2 over groups of tied x, n₂ the same over tied y, and nc / nd the concordant /
 *   discordant pairs (a pair tied in x or y is neither),
 *     τ_b = (nc − nd) / √((n₀ − n₁)(n₀ − n₂)).
 *   Computed in O(n log n) (Knight 1966, as scipy does): sort the pairs by (x, y); then the swaps s
 *   a stable merge sort of y needs are the pairs with xᵢ < xⱼ and yᵢ > yⱼ (within tied x, y is
 *   already sorted), i.e. s = nd; with n₃ the pairs tied in both x and y,
 *   nc + nd = n₀ − n₁ − n₂ + n₃, so nc − nd = n₀ − n₁ − n₂ + n₃ − 2s.
 * - Spearman's ρ (scipy `spearmanr`): the Pearson correlation of the ranks, tied values getting the
 *   average of the ranks they span ("average" ranks):
 *     ρ = Σ (Rxᵢ − R̄)(Ryᵢ − R̄) / √(Σ (Rxᵢ − R̄)² · Σ (Ryᵢ − R̄)²),  R̄ = (n + 1)/2.
 *
 * - Pearson's r (scipy `pearsonr`): r = Σ (xᵢ − x̄)(yᵢ − ȳ) / √(Σ (xᵢ − x̄)² · Σ (yᵢ − ȳ)²), the
 *   means subtracted first (two passes), so large offsets do not cost precision.
 *
 * Undefined → null with a reason (scipy returns NaN): fewer than 2 pairs, or either side constant
 * (every value tied), where the denominator is 0.
 */
import type { Value } from "./Kappa.js"

const tooFew = "undefined: fewer than 2 pairs"
const constant = "undefined: one side has the same value for every item"

/** Σ t(t − 1)/2 over runs of equal values in a sorted array. */
const tiedPairs = (sorted: ArrayLike<number>): number => {
  let pairs = 0
  let run = 1
  for (let i = 1; i <= sorted.length; i++) {
    if (i < sorted.length && sorted[i] === sorted[i - 1]) {
      run++
    } else {
      pairs += (run * (run - 1)) / 2
      run = 1
    }
  }
  return pairs
}

/** Sorts `values` ascending in place (stable merge sort) and returns the number of swaps: pairs i < j with values[i] > values[j]. */
const mergeSortSwaps = (values: Float64Array): number => {
  const n = values.length
  let from: Float64Array = values
  let to: Float64Array = new Float64Array(n)
  let swaps = 0
  for (let width = 1; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(lo + width, n)
      const hi = Math.min(lo + 2 * width, n)
      let i = lo
      let j = mid
      let k = lo
      while (i < mid && j < hi) {
        if (from[j]! < from[i]!) {
          // Every value still waiting on the left is greater than from[j]: each is one swap.
          swaps += mid - i
          to[k++] = from[j++]!
        } else {
          to[k++] = from[i++]!
        }
      }
      while (i < mid) to[k++] = from[i++]!
      while (j < hi) to[k++] = from[j++]!
    }
    const swap = from
    from = to
    to = swap
  }
  if (from !== values) values.set(from)
  return swaps
}

/** Kendall's τ-b of the pairs (x[i], y[i]); see the module comment. */
export const kendallTauB = (x: ReadonlyArray<number>, y: ReadonlyArray<number>): Value => {
  const n = Math.min(x.length, y.length)
  if (n < 2) return { value: null, reason: tooFew }
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => x[a]! - x[b]! || y[a]! - y[b]!)
  const xs = Float64Array.from(order, (i) => x[i]!)
  const ys = Float64Array.from(order, (i) => y[i]!)
  const n0 = (n * (n - 1)) / 2
  const n1 = tiedPairs(xs)
  // Pairs tied in both x and y: runs of equal (x, y) in the (x, y)-sorted order.
  let n3 = 0
  let run = 1
  for (let i = 1; i <= n; i++) {
    if (i < n && xs[i] === xs[i - 1] && ys[i] === ys[i - 1]) {
      run++
    } else {
      n3 += (run * (run - 1)) / 2
      run = 1
    }
  }
  const swaps = mergeSortSwaps(ys)
  const n2 = tiedPairs(ys)
  const denominator = Math.sqrt((n0 - n1) * (n0 - n2))
  if (denominator === 0) return { value: null, reason: constant }
  return { value: (n0 - n1 - n2 + n3 - 2 * swaps) / denominator }
}

/** Ranks 1…n with ties given the average of the ranks they span (scipy `rankdata(method="average")`). */
export const averageRanks = (values: ReadonlyArray<number>): Float64Array => {
  const n = values.length
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => values[a]! - values[b]!)
  const ranks = new Float64Array(n)
  let i = 0
  while (i < n) {
    let j = i
    while (j + 1 < n && values[order[j + 1]!] === values[order[i]!]) j++
    // Positions i…j (0-based) hold ranks i + 1 … j + 1, whose average is (i + j)/2 + 1.
    const rank = (i + j) / 2 + 1
    for (let m = i; m <= j; m++) ranks[order[m]!] = rank
    i = j + 1
  }
  return ranks
}

/** Spearman's ρ with average ranks; see the module comment. */
export const spearmanRho = (x: ReadonlyArray<number>, y: ReadonlyArray<number>): Value => {
  const n = Math.min(x.length, y.length)
  if (n < 2) return { value: null, reason: tooFew }
  const rx = averageRanks(x.slice(0, n))
  const ry = averageRanks(y.slice(0, n))
  const mean = (n + 1) / 2
  let sxy = 0
  let sxx = 0
  let syy = 0
  for (let i = 0; i < n; i++) {
    const dx = rx[i]! - mean
    const dy = ry[i]! - mean
    sxy += dx * dy
    sxx += dx * dx
    syy += dy * dy
  }
  if (sxx === 0 || syy === 0) return { value: null, reason: constant }
  return { value: sxy / Math.sqrt(sxx * syy) }
}

/** Pearson's r; see the module comment. */
export const pearson = (x: ReadonlyArray<number>, y: ReadonlyArray<number>): Value => {
  const n = Math.min(x.length, y.length)
  if (n < 2) return { value: null, reason: tooFew }
  let mx = 0
  let my = 0
  for (let i = 0; i < n; i++) {
    mx += x[i]!
    my += y[i]!
  }
  mx /= n
  my /= n
  let sxy = 0
  let sxx = 0
  let syy = 0
  for (let i = 0; i < n; i++) {
    const dx = x[i]! - mx
    const dy = y[i]! - my
    sxy += dx * dy
    sxx += dx * dx
    syy += dy * dy
  }
  if (sxx === 0 || syy === 0) return { value: null, reason: constant }
  // Rounding can carry |r| a hair past 1 on (anti)collinear data; scipy clips the same way.
  return { value: Math.max(-1, Math.min(1, sxy / Math.sqrt(sxx * syy))) }
}

/** Labelled units (a unit's (x, y) pairs) correlated under a bootstrap's multiplicities. */
export interface UnitCorrelation {
  /** Pearson's r of every unit's pairs, unit u counted `multiplicity[u]` times. */
  readonly pearson: (multiplicity: Int32Array) => Value
  /** Kendall's τ-b the same way. */
  readonly kendallTauB: (multiplicity: Int32Array) => Value
}

/** Units beyond which τ-b is computed on the expanded resample (the unit-pair tables would take U² memory). */
const MAX_TABLE_UNITS = 1_500

/**
 * Pearson's r and Kendall's τ-b of units resampled with multiplicities m_u, without expanding the
 * resample (a bootstrap of 140 RAGChecker pairs × 10,000 resamples × a dozen metrics would otherwise
 * sort 280 values 240,000 times):
 * - r from each unit's sums (n, Σx, Σy, Σxy, Σx², Σy²) of values centred on the data's means (so the
 *   one-pass formula does not lose precision), scaled by m_u;
 * - τ-b from the counts of every pair of labels: for units u ≠ v, S(u, v) = Σ sign(xᵢ − xⱼ)·sign(yᵢ −
 *   yⱼ), TX(u, v) the pairs tied in x, TY(u, v) in y, over i ∈ u, j ∈ v; within u, W_S, W_TX, W_TY
 *   over its pairs i < j. A unit drawn m times adds m²·W_S to S (pairs within a copy and between
 *   copies), m²·W_TX + k·m(m − 1)/2 to TX (a label and its own copy are tied), the same to TY, and
 *   units u, v add m_u·m_v times their cross counts. With N = Σ m_u k_u, n₀ = N(N − 1)/2:
 *   τ_b = S / √((n₀ − TX)(n₀ − TY)) — the definition `kendallTauB` computes.
 * Above `MAX_TABLE_UNITS` units τ-b expands the resample and calls `kendallTauB`.
 */
export const unitCorrelations = (units: ReadonlyArray<ReadonlyArray<readonly [number, number]>>): UnitCorrelation => {
  const U = units.length
  let count = 0
  let mx = 0
  let my = 0
  for (const u of units) {
    for (const [x, y] of u) {
      mx += x
      my += y
      count++
    }
  }
  mx = count === 0 ? 0 : mx / count
  my = count === 0 ? 0 : my / count
  const sums = new Float64Array(U * 6)
  units.forEach((u, i) => {
    for (const [x0, y0] of u) {
      const x = x0 - mx
      const y = y0 - my
      sums[i * 6] += 1
      sums[i * 6 + 1] += x
      sums[i * 6 + 2] += y
      sums[i * 6 + 3] += x * y
      sums[i * 6 + 4] += x * x
      sums[i * 6 + 5] += y * y
    }
  })
  const pearsonOf = (m: Int32Array): Value => {
    let n = 0
    let sx = 0
    let sy = 0
    let sxy = 0
    let sxx = 0
    let syy = 0
    for (let u = 0; u < U; u++) {
      const w = m[u]!
      if (w === 0) continue
      const o = u * 6
      n += w * sums[o]!
      sx += w * sums[o + 1]!
      sy += w * sums[o + 2]!
      sxy += w * sums[o + 3]!
      sxx += w * sums[o + 4]!
      syy += w * sums[o + 5]!
    }
    if (n < 2) return { value: null, reason: tooFew }
    const vx = sxx - (sx * sx) / n
    const vy = syy - (sy * sy) / n
    // A constant side leaves only rounding in its variance.
    if (!(vx > 1e-12 * sxx) || !(vy > 1e-12 * syy)) return { value: null, reason: constant }
    return { value: Math.max(-1, Math.min(1, (sxy - (sx * sy) / n) / Math.sqrt(vx * vy))) }
  }

  const sign = (d: number) => (d > 0 ? 1 : d < 0 ? -1 : 0)
  const expanded = (m: Int32Array): Value => {
    const x: Array<number> = []
    const y: Array<number> = []
    for (let u = 0; u < U; u++) {
      for (let c = 0; c < m[u]!; c++) {
        for (const [a, b] of units[u]!) {
          x.push(a)
          y.push(b)
        }
      }
    }
    return kendallTauB(x, y)
  }
  if (U > MAX_TABLE_UNITS) return { pearson: pearsonOf, kendallTauB: expanded }

  const S = new Int32Array(U * U)
  const TX = new Int32Array(U * U)
  const TY = new Int32Array(U * U)
  const k = Int32Array.from(units, (u) => u.length)
  for (let u = 0; u < U; u++) {
    const a = units[u]!
    for (let v = u; v < U; v++) {
      const b = units[v]!
      let s = 0
      let tx = 0
      let ty = 0
      for (let i = 0; i < a.length; i++) {
        for (let j = u === v ? i + 1 : 0; j < b.length; j++) {
          const dx = a[i]![0] - b[j]![0]
          const dy = a[i]![1] - b[j]![1]
          s += sign(dx) * sign(dy)
          if (dx === 0) tx++
          if (dy === 0) ty++
        }
      }
      S[u * U + v] = s
      TX[u * U + v] = tx
      TY[u * U + v] = ty
    }
  }
  const present = new Int32Array(U)
  const kendallOf = (m: Int32Array): Value => {
    let p = 0
    let N = 0
    for (let u = 0; u < U; u++) {
      if (m[u]! > 0) {
        present[p++] = u
        N += m[u]! * k[u]!
      }
    }
    if (N < 2) return { value: null, reason: tooFew }
    let s = 0
    let tx = 0
    let ty = 0
    for (let a = 0; a < p; a++) {
      const u = present[a]!
      const mu = m[u]!
      const row = u * U
      const within = mu * mu
      const self = (k[u]! * mu * (mu - 1)) / 2
      s += within * S[row + u]!
      tx += within * TX[row + u]! + self
      ty += within * TY[row + u]! + self
      for (let b = a + 1; b < p; b++) {
        const v = present[b]!
        const w = mu * m[v]!
        s += w * S[row + v]!
        tx += w * TX[row + v]!
        ty += w * TY[row + v]!
      }
    }
    const n0 = (N * (N - 1)) / 2
    const denominator = Math.sqrt((n0 - tx) * (n0 - ty))
    if (denominator === 0) return { value: null, reason: constant }
    return { value: s / denominator }
  }
  return { pearson: pearsonOf, kendallTauB: kendallOf }
}
