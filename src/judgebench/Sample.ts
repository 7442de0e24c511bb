/**
 * `judge-bench --sample N`: a seeded, stratified sample for a cheap estimate. Items are grouped by
 * stratum (RAGChecker: the domain; ExpertQA: the experts' label; relevance: NIST's grade), the N
 * places shared out in proportion to the strata's sizes (largest remainders, ties to the larger
 * stratum, then the first seen; every stratum that can have one gets at least one when N allows),
 * each stratum shuffled with the seeded generator (Fisher–Yates on `makePrng`), its first places
 * taken — and the sample returned in the items' own order, so the same N and seed always give the
 * same sample (and so the same run, resumed rather than paid again).
 */
import { makePrng } from "../stats/Paired.js"

/** How many of each stratum's items a sample of `n` takes (sizes in first-seen order). */
export const allocate = (sizes: ReadonlyArray<number>, n: number): Array<number> => {
  const total = sizes.reduce((s, x) => s + x, 0)
  if (n >= total) return [...sizes]
  const exact = sizes.map((s) => (s * n) / total)
  const take = exact.map((x) => Math.floor(x))
  // Every non-empty stratum gets one place when there are places enough for all of them.
  const nonEmpty = sizes.filter((s) => s > 0).length
  if (n >= nonEmpty) sizes.forEach((s, i) => (take[i] = s > 0 ? Math.max(1, take[i]!) : 0))
  let left = n - take.reduce((s, x) => s + x, 0)
  const order = sizes.map((_, i) => i).sort((a, b) =>
    exact[b]! - take[b]! - (exact[a]! - take[a]!) || sizes[b]! - sizes[a]! || a - b
  )
  // Largest remainders first; a stratum at its size gets no more. A negative `left` (the minimum of
  // one each overshot) takes back from the largest strata with places to spare.
  for (let k = 0; left > 0; k = (k + 1) % order.length) {
    const i = order[k]!
    if (take[i]! < sizes[i]!) {
      take[i]! += 1
      left--
    }
  }
  const bySize = sizes.map((_, i) => i).sort((a, b) => take[b]! - take[a]! || a - b)
  for (let k = 0; left < 0; k = (k + 1) % bySize.length) {
    const i = bySize[k]!
    if (take[i]! > 1) {
      take[i]! -= 1
      left++
    }
  }
  return take
}

/** A seeded, stratified sample of `n` items (all of them when n ≥ their number), in their own order. */
export const stratifiedSample = <A>(
  items: ReadonlyArray<A>,
  stratum: (item: A) => string,
  n: number,
  seed: number
): Array<A> => {
  if (n >= items.length) return [...items]
  const groups = new Map<string, Array<number>>()
  items.forEach((item, i) => {
    const key = stratum(item)
    let g = groups.get(key)
    if (g === undefined) groups.set(key, g = [])
    g.push(i)
  })
  const lists = [...groups.values()]
  const take = allocate(lists.map((g) => g.length), n)
  const prng = makePrng(seed)
  const chosen: Array<number> = []
  lists.forEach((g, k) => {
    const shuffled = [...g]
    for (let i = shuffled.length - 1; i > 0; i--) {
      const j = prng.nextInt(i + 1)
      const t = shuffled[i]!
      shuffled[i] = shuffled[j]!
      shuffled[j] = t
    }
    chosen.push(...shuffled.slice(0, take[k]!))
  })
  return chosen.sort((a, b) => a - b).map((i) => items[i]!)
}
