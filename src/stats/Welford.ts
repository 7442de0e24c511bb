/**
 * Online mean and sample standard deviation (Welford's algorithm): constant memory in the number of
 * values, numerically stable. Mutable on purpose — summaries fold millions of values.
 */
export interface Welford {
  n: number
  mean: number
  m2: number
}

export const empty = (): Welford => ({ n: 0, mean: 0, m2: 0 })

export const push = (w: Welford, x: number): void => {
  w.n++
  const d = x - w.mean
  w.mean += d / w.n
  w.m2 += d * (x - w.mean)
}

/** The mean; null with no values. */
export const mean = (w: Welford): number | null => (w.n === 0 ? null : w.mean)
