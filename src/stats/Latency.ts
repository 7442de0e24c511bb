/**
 * Latency percentiles: one rule for every place that summarises per-query or per-call times (the
 * retrieval pipelines' spans, the live target's answer times and time to first byte).
 */

/**
 * The p-th percentile (0–100) of sorted values by linear interpolation between closest ranks —
 * numpy's default (Hyndman & Fan type 7): h = (n − 1)·p/100, x[⌊h⌋] + (h − ⌊h⌋)(x[⌊h⌋+1] − x[⌊h⌋]).
 * Null for no values.
 */
export const percentile = (sorted: ReadonlyArray<number>, p: number): number | null => {
  const n = sorted.length
  if (n === 0) return null
  const h = ((n - 1) * Math.min(100, Math.max(0, p))) / 100
  const lo = Math.floor(h)
  const hi = Math.min(n - 1, lo + 1)
  return sorted[lo]! + (h - lo) * (sorted[hi]! - sorted[lo]!)
}

/** avg / P50 / P90 / P99 / max over `n` values (ms). */
export interface SpanStats {
  readonly n: number
  readonly mean: number
  readonly p50: number
  readonly p90: number
  readonly p99: number
  readonly max: number
}

/** Statistics of the finite values given (in any order); undefined when there are none. */
export const spanStats = (values: ReadonlyArray<number>): SpanStats | undefined => {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b)
  if (sorted.length === 0) return undefined
  return {
    n: sorted.length,
    mean: sorted.reduce((s, x) => s + x, 0) / sorted.length,
    p50: percentile(sorted, 50)!,
    p90: percentile(sorted, 90)!,
    p99: percentile(sorted, 99)!,
    max: sorted[sorted.length - 1]!
  }
}
