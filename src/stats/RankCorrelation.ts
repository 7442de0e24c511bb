/**
 * Rank correlation of two paired samples x, y (n pairs): do they order the items the same way?
 * Used by `rag-eval calibrate` to compare per-query (or per-system) NDCG under human and judge grades.
 * Both follow scipy.stats, so figures can be checked there.
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
