/**
 * The target's latency over a run: avg / P50 / P90 / P99 / max of every answered call's latency, and
 * of the time to first byte of the streamed ones (for a JSON answer the first byte comes with the
 * rest, so its TTFB says nothing the latency does not). Percentiles: `stats/Latency.ts`.
 */
import { type SpanStats, spanStats } from "../stats/Latency.js"

export interface TargetLatency {
  /** Answers measured. */
  readonly calls: number
  /** Of those, streamed (SSE). */
  readonly streamed: number
  /** Latency (request sent → body read), ms; undefined with no answers. */
  readonly total?: SpanStats | undefined
  /** Time to first byte of the streamed answers, ms; undefined with none. */
  readonly ttfb?: SpanStats | undefined
}

export const targetLatency = (
  responses: Iterable<{ readonly latencyMs: number; readonly ttfbMs: number; readonly streamed: boolean }>
): TargetLatency => {
  const totals: Array<number> = []
  const ttfbs: Array<number> = []
  for (const r of responses) {
    totals.push(r.latencyMs)
    if (r.streamed) ttfbs.push(r.ttfbMs)
  }
  return { calls: totals.length, streamed: ttfbs.length, total: spanStats(totals), ttfb: spanStats(ttfbs) }
}
